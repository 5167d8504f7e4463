"""Scenes in and out: the TOML scene format, URDF and MJCF import, MJCF export."""
