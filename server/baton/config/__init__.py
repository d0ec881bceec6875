"""Configuration: profiles (one account of one agent CLI) and settings, with layers."""

from baton.config.profiles import Profile, default_profiles

__all__ = ["Profile", "default_profiles"]
