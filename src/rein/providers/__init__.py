"""Model APIs behind one small interface; a scripted provider as a test double."""
