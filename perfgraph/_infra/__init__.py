"""File plumbing under every layer: atomic writes and interrupts, git revisions, TOML reading.

Imports nothing of perfgraph but :mod:`perfgraph.errors`.
"""
