"""The driver worker: an agent outside rein does a node's work, one turn at a time (``rein next``,
``rein submit``). Kept empty: a driver turn imports only the modules it uses."""
