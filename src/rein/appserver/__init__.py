"""``rein app-server``: Codex's app-server v2 protocol over the session runtime.

:mod:`.wire` frames JSON lines on stdio, :mod:`.server` holds one connection (handshake,
dispatch, turns streaming, questions answered), :mod:`.methods` the requests implemented.
"""
