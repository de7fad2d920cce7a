"""Who the worker is: OAP profile discovery, resolution, narrowing and writeback."""
