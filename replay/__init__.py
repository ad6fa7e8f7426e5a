"""Replay: modes, graders, metrics and the CLI (see README)."""
