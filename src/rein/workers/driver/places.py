"""Where the driver's files are in a workspace: the envelope a driver writes, the inputs too
large to inline. Apart from :mod:`rein.workers.driver.protocol`, which re-exports them, so
that printing an instruction (:mod:`rein.workers.driver.render`) names the inbox without
importing the protocol's schemas and checks."""

from __future__ import annotations

INBOX = ".rein/inbox.json"  # where `rein submit` reads the envelope when given no file
SPILL_DIR = ".rein/driver"  # an instruction's large inputs, one folder per token

__all__ = ["INBOX", "SPILL_DIR"]
