"""Context assembly: the system prompt from rules (AGENTS.md), environment facts and the tool catalogue."""
