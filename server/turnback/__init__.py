"""turnback: undo and redo an AI coding agent's turns, from any editor."""

__version__ = "0.1.0"
