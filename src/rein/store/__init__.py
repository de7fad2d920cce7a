"""Where run state lives: SQLite under .rein/ by default."""
