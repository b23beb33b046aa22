"""Putting a state back: the plan, the work-tree writer, undo/redo and rescued versions."""
