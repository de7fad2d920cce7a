"""The evaluation's durable record: a plan, a journal of trials, and a lock.

An evaluation lives in ``.rein/evals/<id>/`` of the workspace it was started from:

``plan.json``       what it runs: the scenarios and configurations (with their digests), the
                    number of trials, the options; written once, before any trial starts
``journal.jsonl``   one line per event, appended and flushed to disk before the next step:
                    ``started`` (a trial attempt begins, with its folder), ``finished``
                    (its result) and ``stopped`` (Ctrl-C stopped the attempt before its
                    end); a line cut short by a kill is ignored
``lock``            held (``flock``) by the one process running the evaluation
``trials/``         one folder per trial attempt (its workspace, store, logs, trajectory)
``result.json``     the results, once every trial has finished

**Resuming** (``rein eval --resume ID``) reads the journal and never runs a finished trial
again: its result is adopted. A trial that was started and never finished was interrupted
(the process was killed while it ran); it runs again exactly once, as attempt 2, in a fresh
folder (the interrupted attempt's folder is kept for inspection) and its result says
``attempt: 2``. A trial interrupted twice is not run a third time: it is recorded as
``interrupted`` and reported, not graded. So every trial runs to a result at most once, and
a trial runs at most twice in all. An attempt the person stopped (Ctrl-C) is known not to
be the trial's doing: it does not count, and the trial runs again in a fresh folder.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import secrets
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.frozen import Record, field
from rein.core.writing import write_atomic
from rein.errors import Location, Refused, ReinError
from rein.eval.trial import Trial

FORMAT = 1  # the version of plan.json and journal.jsonl
EVALS = Path(".rein") / "evals"
MAX_ATTEMPTS = 2


def new_id(now: dt.datetime | None = None) -> str:
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%S")
    return f"eval-{stamp}-{secrets.token_hex(3)}"


class Entry(Record):
    """What the journal says of one trial."""

    started: int = 0  # attempts begun
    stopped: int = 0  # of those, attempts stopped by the person (Ctrl-C): not the trial's doing
    result: Trial | None = None
    folders: list[str] = field(default_factory=list)

    @property
    def killed(self) -> int:
        """Attempts begun that neither ended nor were stopped: the process was killed."""
        return self.started - self.stopped - (self.result is not None)


class Ledger:
    """The plan and journal of one evaluation. Thread-safe: lanes append concurrently."""

    def __init__(self, folder: Path, plan: Mapping[str, Any]) -> None:
        self.folder = folder
        self.plan = dict(plan)
        self._lock = threading.Lock()
        self._held: int | None = None

    @property
    def id(self) -> str:
        return str(self.plan["evaluation"])

    @property
    def trials_root(self) -> Path:
        return self.folder / "trials"

    @classmethod
    def create(cls, workspace: Path, plan: Mapping[str, Any]) -> Ledger:
        folder = workspace / EVALS / str(plan["evaluation"])
        if folder.exists():
            raise Refused(f"evaluation {plan['evaluation']} exists already", code="EVAL008",
                          hint=f"continue it with `rein eval --resume {plan['evaluation']}`")
        (folder / "trials").mkdir(parents=True)
        _write_atomic(folder / "plan.json", {"format": FORMAT, **plan})
        return cls(folder, {"format": FORMAT, **plan})

    @classmethod
    def open(cls, workspace: Path, evaluation: str) -> Ledger:
        folder = workspace / EVALS / evaluation
        if not (folder / "plan.json").is_file():
            known = sorted(p.name for p in (workspace / EVALS).glob("eval-*")) \
                if (workspace / EVALS).is_dir() else []
            raise ReinError(f"no evaluation {evaluation!r} in {workspace}", code="EVAL404",
                            hint=("evaluations here: " + ", ".join(known[-5:])) if known
                            else "start one with `rein eval PATH --config NAME`")
        try:
            plan = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReinError(f"evaluation {evaluation}'s plan cannot be read: {exc}",
                            code="EVAL015", location=Location(file=str(folder / "plan.json")),
                            hint="its trials' results are kept in journal.jsonl beside it; "
                                 "start a new evaluation") from None
        if not isinstance(plan, dict):
            raise ReinError(f"evaluation {evaluation}'s plan is not a JSON object",
                            code="EVAL015", location=Location(file=str(folder / "plan.json")),
                            hint="start a new evaluation")
        if plan.get("format") != FORMAT:
            raise ReinError(f"evaluation {evaluation} was written in format "
                            f"{plan.get('format')}; this rein reads format {FORMAT}",
                            code="EVAL013", hint="resume it with the rein that started it")
        return cls(folder, plan)

    # -- the lock ------------------------------------------------------------------------

    def acquire(self) -> None:
        """Hold the evaluation for this process (EVAL008 when another process runs it)."""
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Refused(f"evaluation {self.id} is being run by another process",
                          code="EVAL008", hint="wait for it to end, or stop it first; "
                          "its finished trials are kept") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._held = fd

    def release(self) -> None:
        if self._held is not None:
            fcntl.flock(self._held, fcntl.LOCK_UN)
            os.close(self._held)
            self._held = None

    # -- the journal ---------------------------------------------------------------------

    def started(self, trial: str, attempt: int, folder: Path) -> None:
        self._append({"event": "started", "trial": trial, "attempt": attempt,
                      "folder": str(folder), "at": _now()})

    def stopped(self, trial: str, attempt: int) -> None:
        """The person stopped this attempt (Ctrl-C) before it ended: it has no result."""
        self._append({"event": "stopped", "trial": trial, "attempt": attempt, "at": _now()})

    def finished(self, result: Trial) -> None:
        self._append({"event": "finished", "trial": result.trial, "at": _now(),
                      "result": result.to_json()})

    def finish(self, result: Mapping[str, Any]) -> Path:
        path = self.folder / "result.json"
        _write_atomic(path, result)
        return path

    def entries(self) -> dict[str, Entry]:
        """Every trial the journal names, with what it says of it."""
        out: dict[str, Entry] = {}
        path = self.folder / "journal.jsonl"
        if not path.exists():
            return out
        with path.open("rb") as handle:
            for raw in handle:
                if not raw.endswith(b"\n"):
                    break  # cut short by a kill: never written in full
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                entry = out.setdefault(str(line.get("trial")), Entry())
                if line.get("event") == "started":
                    entry.started += 1
                    entry.folders.append(str(line.get("folder")))
                elif line.get("event") == "stopped":
                    entry.stopped += 1
                elif line.get("event") == "finished" and entry.result is None:
                    entry.result = Trial.from_json(line["result"])
        return out

    def _append(self, line: Mapping[str, Any]) -> None:
        data = (json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.folder / "journal.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                         0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)


def listing(workspace: Path) -> list[dict[str, Any]]:
    """The evaluations of a workspace, newest first: id, when, whether they finished."""
    root = workspace / EVALS
    out = []
    for folder in sorted(root.glob("eval-*") if root.is_dir() else [], reverse=True):
        try:
            plan = json.loads((folder / "plan.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        out.append({"evaluation": folder.name, "created_at": plan.get("created_at"),
                    "finished": (folder / "result.json").is_file(),
                    "configurations": [c["name"] for c in plan.get("configurations", [])],
                    "scenarios": len(plan.get("scenarios", []))})
    return out


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")


def _write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    write_atomic(path, json.dumps(dict(data), indent=2, sort_keys=True, ensure_ascii=False)
                 + "\n")


__all__ = ["EVALS", "FORMAT", "MAX_ATTEMPTS", "Entry", "Ledger", "listing", "new_id"]
