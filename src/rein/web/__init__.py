"""The web console (``rein serve``): watch and steer runs from a browser.

A surface over the engine: pages are rendered from the store, live updates come from the one
event log, and every change is one call of :class:`rein.Harness`. Needs the ``web`` extra
(Starlette and uvicorn); :mod:`rein.web.server` says how to get it when it is missing.
"""
