"""Whether this process runs the way agent sandboxes run the commands of an agent.

The sandboxes of the Codex CLI and of Claude Code (bubblewrap, seccomp, Landlock) set
no-new-privileges on every command they run, and the kernel keeps it for every descendant:
no process under them can drop it. Linux shows it as ``NoNewPrivs: 1`` in
``/proc/self/status``. A person's shell, and the console or app-server a person starts, do
not have it (unless a container runtime sets it: that is what the opt-in
``[approver] answer_when_confined`` is for).
"""

from __future__ import annotations

import os
from pathlib import Path

from rein.core.frozen import Frozen

STATUS = Path("/proc/self/status")


class Confinement(Frozen):
    """What the kernel says of this process: no-new-privileges and its seccomp mode."""

    no_new_privs: bool | None  # None: the kernel does not say (not Linux)
    seccomp: int | None = None  # 0 none, 1 strict, 2 filter; None: not said

    @property
    def confined(self) -> bool:
        return self.no_new_privs is True


def confinement(status: Path = STATUS) -> Confinement:
    """This process's confinement, read from ``status`` (``/proc/self/status``)."""
    try:
        text = status.read_text(encoding="ascii", errors="replace")
    except OSError:
        return Confinement(no_new_privs=None)
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    nnp = fields.get("NoNewPrivs", "").strip()
    mode = fields.get("Seccomp", "").strip()
    return Confinement(no_new_privs={"1": True, "0": False}.get(nnp),
                       seccomp=int(mode) if mode.isdigit() else None)


def has_terminal() -> bool:
    """Whether this process has a controlling terminal (a person's shell gives one; an
    agent's sandbox, a pipe or a service does not)."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False
    os.close(fd)
    return True


__all__ = ["STATUS", "Confinement", "confinement", "has_terminal"]
