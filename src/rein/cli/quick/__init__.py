"""Commands answered without click: the plain forms of the driver's every turn and of
``rein graph validate``. Kept empty: each imports only what it needs."""
