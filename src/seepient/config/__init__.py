"""Settings schema, loading (user < project < flags) and Seepient's well-known paths."""

from seepient.config.paths import SeepientPaths
from seepient.config.settings import Settings, SettingsError, load_settings

__all__ = ["SeepientPaths", "Settings", "SettingsError", "load_settings"]
