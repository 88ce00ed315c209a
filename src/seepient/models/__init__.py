"""Model adapters (one module per wire format), the replay model and model resolution by spec."""
