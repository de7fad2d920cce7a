"""Workers: who does a node's work (driver, model, command; scripted as a test double)."""
