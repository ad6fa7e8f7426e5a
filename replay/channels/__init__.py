"""Channels of a trial besides the LLM: faults, the simulated user, tool playback, hidden secrets.

Private: use what ``replay`` exports.
"""
