"""Documents: AGS graphs, OAP profiles, AGX expressions, loading and digests. Pure, no I/O
beyond reading the file asked for."""
