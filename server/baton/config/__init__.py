"""Configuration: profiles (one account of one agent CLI) and settings, with layers.

``load_settings(root)`` gives the effective :class:`Settings` of a project folder with the
source of every value; :class:`~baton.config.watch.SettingsCache` keeps them per folder and
re-reads them when a file changes; :mod:`baton.config.secrets` resolves keyring references.
"""

from baton.config.layers import ConfigError, Source
from baton.config.profiles import Profile, default_profiles
from baton.config.settings import ReviewPolicy, Settings, VerifyStep, load_settings

__all__ = [
    "ConfigError",
    "Profile",
    "ReviewPolicy",
    "Settings",
    "Source",
    "VerifyStep",
    "default_profiles",
    "load_settings",
]
