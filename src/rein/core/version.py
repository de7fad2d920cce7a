"""The version of rein, as run records and traces name the harness (the package reads it
from here too: pyproject.toml declares it dynamic)."""

VERSION = "0.1.0"
