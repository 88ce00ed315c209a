"""The command-line surface: ``seepient run``, ``demo``, ``sandbox run``, ``audit verify``."""
