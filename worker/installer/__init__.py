"""Registering Cairn with Claude Code and editors: safe merges into other programs' config files."""
