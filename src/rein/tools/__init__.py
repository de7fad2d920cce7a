"""Built-in tools, each call checked against the effective permissions and sandbox policy."""
