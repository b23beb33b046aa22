"""Git and file-system primitives: the repository, paths, trees, refs, locks, durability."""
