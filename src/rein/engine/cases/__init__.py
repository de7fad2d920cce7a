"""Use cases beside running: a driver's turn, threads and turns (sessions), reads, reports,
upkeep. Each is reached through the Harness; none is imported by the run mechanics."""
