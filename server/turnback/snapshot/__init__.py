"""Capturing a work tree as a tree object: the scanner, untracked policy, ignore rules, watcher."""
