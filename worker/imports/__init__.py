"""Importing history recorded before Cairn was installed (Claude Code transcripts)."""
