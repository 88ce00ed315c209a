"""Surfaces: the CLI, the TUI, the server and the SDK. Each talks only to ``runtime.Session``."""
