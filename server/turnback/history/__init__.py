"""What was captured and when: the timeline of turns, the restore journal, turns in progress."""
