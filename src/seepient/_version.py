"""The release this is: one place for the package, the CLI and the user agent the model client sends."""

__version__ = "0.1.0"
