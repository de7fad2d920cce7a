"""The queue key: what makes a job on the DBOS queues one that a coordinator of this fleet
wrote, and an answer one that a worker of this fleet wrote.

Anyone who can write to the PostgreSQL database can insert rows into the queue tables, so a
row proves nothing about who wrote it. Coordinators and workers therefore share a secret
that is never stored in the database: the *queue key*, a file each machine holds. Every job
is enqueued signed (HMAC-SHA256 over its workflow's name, its id and the exact text of its
payload, which names the run, the node, the attempt and the digest the run was approved
for), and every answer comes back signed the same way; whoever reads one checks it before
anything else and refuses it with ``SCALE010`` when it does not verify.

Where the key is, first found wins:

1. ``REIN_QUEUE_KEY_FILE``, the path of the file (a mounted secret, for instance);
2. ``[executor] key_file`` of the managed or user ``rein.toml``; a project's ``rein.toml``
   cannot name it, since a cloned repository would then choose the key (``SCALE009``);
3. ``queue.key`` beside the user ``rein.toml``: ``$XDG_CONFIG_HOME/rein/queue.key``, else
   ``~/.config/rein/queue.key``.

The file must be a regular file of this user that no one else may read or write (mode
0600 or narrower), holding at least 32 characters; ``rein worker --new-key`` writes one.
A coordinator or a worker without a usable key refuses to start (``SCALE009``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.config.files import config_paths
from rein.errors import ConfigError, RunError

KEY_FILE_ENV = "REIN_QUEUE_KEY_FILE"
DEFAULT_NAME = "queue.key"
MIN_CHARS = 32
_MAX_BYTES = 4096
_HEADER = "rein-signed-1"
_HINT = ("create one with `rein worker --new-key` and copy that same file, mode 0600, to "
         "every machine that runs a coordinator or a worker (or name it with "
         f"{KEY_FILE_ENV} or [executor] key_file in the user rein.toml)")


class QueueKey:
    """A loaded queue key: signs and opens jobs and answers."""

    def __init__(self, secret: bytes, *, path: str = "") -> None:
        self._secret = secret
        self.path = path
        # Names the key in messages (two machines with different keys), revealing nothing.
        self.id = hashlib.sha256(b"rein-queue-key-id\0" + secret).hexdigest()[:12]

    def _mac(self, label: str, workflow_id: str, text: str) -> str:
        message = f"{_HEADER}\0{label}\0{workflow_id}\0{text}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def sign(self, label: str, workflow_id: str, text: str) -> str:
        """``text`` as it goes on the queue under ``workflow_id``: a header line with this
        key's id and the MAC, then the text itself. ``label`` says what it is (a job of one
        workflow, or the answer to one), so one is never accepted as the other."""
        return f"{_HEADER} {self.id} {self._mac(label, workflow_id, text)}\n{text}"

    def open(self, label: str, workflow_id: str, signed: object) -> str:
        """The text of ``signed``, once its MAC verifies; ``SCALE010`` when it does not."""
        if not isinstance(signed, str):
            raise _rejected(f"{label} {workflow_id} is not text")
        header, _, text = signed.partition("\n")
        parts = header.split(" ")
        if len(parts) != 3 or parts[0] != _HEADER:
            raise _rejected(f"{label} {workflow_id} carries no queue signature")
        if not hmac.compare_digest(parts[2], self._mac(label, workflow_id, text)):
            if parts[1] != self.id:
                raise _rejected(f"{label} {workflow_id} was signed with queue key {parts[1]}; "
                                f"this process holds queue key {self.id}")
            raise _rejected(f"{label} {workflow_id} does not verify with the queue key: it "
                            "was altered or forged")
        return text


def _rejected(message: str) -> RunError:
    return RunError(f"not authenticated, not run: {message}", code="SCALE010",
                    hint="only coordinators and workers holding the fleet's queue key "
                         "write jobs and answers; check that every machine has the same "
                         "key file (its id is printed at start)")


def key_path(config: Any, env: Mapping[str, str]) -> Path:
    """Where this process's queue key is (see the module docstring)."""
    if env.get(KEY_FILE_ENV):
        return Path(env[KEY_FILE_ENV]).expanduser()
    section = config.get("executor") or {}
    named = section.get("key_file") if isinstance(section, Mapping) else None
    if named:
        sources = set(getattr(config, "sources", {}).get("executor.key_file") or ())
        project = {path for scope, path in getattr(config, "files", ()) if scope == "project"}
        if sources & project:
            raise ConfigError(
                f"[executor] key_file is set in the project's rein.toml ({min(project)}): a "
                "cloned repository must not choose the queue key", code="SCALE009",
                hint=f"move key_file to the user rein.toml, or set {KEY_FILE_ENV}")
        return Path(str(named)).expanduser()
    return config_paths(Path("."), env)[1][1].parent / DEFAULT_NAME


def load_key(config: Any, env: Mapping[str, str]) -> QueueKey:
    """This process's queue key, or ``SCALE009`` saying what is wrong with it."""
    path = key_path(config, env)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        raise _unusable(path, f"it cannot be opened ({exc.strerror})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _unusable(path, "it is not a regular file")
        if info.st_uid != os.geteuid():
            raise _unusable(path, f"it belongs to user id {info.st_uid}, not this user")
        if info.st_mode & 0o077:
            raise _unusable(path, f"its mode {stat.S_IMODE(info.st_mode):04o} lets others "
                            "read or write it (chmod 600)")
        if info.st_size > _MAX_BYTES:
            raise _unusable(path, f"it is over {_MAX_BYTES} bytes")
        raw = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    secret = raw.strip()
    if len(secret) < MIN_CHARS:
        raise _unusable(path, f"it holds {len(secret)} characters, under {MIN_CHARS}")
    return QueueKey(secret, path=str(path))


def _unusable(path: Path, why: str) -> ConfigError:
    return ConfigError(f"no usable queue key at {path}: {why}", code="SCALE009", hint=_HINT)


def new_key_file(path: Path) -> bool:
    """Write a fresh random key to ``path`` (mode 0600, its folder made); ``False`` when a
    file is already there (it is left as it is)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return False
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
    finally:
        os.close(fd)
    return True


__all__ = ["DEFAULT_NAME", "KEY_FILE_ENV", "MIN_CHARS", "QueueKey", "key_path", "load_key",
           "new_key_file"]
