"""Cairn: local-first long-term memory for AI coding agents."""

__version__ = "0.1.0"
