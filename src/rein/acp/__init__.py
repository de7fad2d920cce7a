"""The ACP (Agent Client Protocol v1) agent: rein's session runtime for ACP clients."""

from __future__ import annotations
