"""Per-turn diffs computed in memory with difflib."""
