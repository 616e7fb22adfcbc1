"""Joins a sandbox's user and network namespace from outside (proxy mode)."""
