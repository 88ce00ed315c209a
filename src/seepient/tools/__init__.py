"""Tools turn a model's tool call into a prepared action and run approved actions through an executor."""
