"""The queue key: where it is read from, what makes it unusable (SCALE009), and what a
signature binds (SCALE010). No PostgreSQL needed, except to show that neither a worker nor
a coordinator starts without a key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rein.config import load_config
from rein.errors import ReinError
from rein.executors.names import CHECK_WORKFLOW, WORKFLOW, answer_label
from rein.executors.queue_key import (
    QueueKey,
    key_path,
    load_key,
    new_key_file,
)
from tests.executors.cluster import REIN

SECRET = b"0123456789abcdef0123456789abcdef-fleet"


def env_of(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "REIN_MANAGED_CONFIG": str(tmp_path / "etc" / "rein.toml"), **extra}


def key_file(path: Path, text: str = SECRET.decode(), mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def refused(code: str, call: object) -> ReinError:
    with pytest.raises(ReinError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.code == code, caught.value
    return caught.value


def test_a_signature_binds_the_text_the_workflow_and_what_it_is() -> None:
    key = QueueKey(SECRET)
    signed = key.sign(WORKFLOW, "run-1/w#1", '{"request": 1}')
    assert key.open(WORKFLOW, "run-1/w#1", signed) == '{"request": 1}'
    head, _, text = signed.partition("\n")
    tampered = [
        (WORKFLOW, "run-1/w#1", f"{head}\n{text.replace('1', '2')}"),  # another payload
        (WORKFLOW, "run-1/w#2", signed),  # replayed under another attempt's id
        (CHECK_WORKFLOW, "run-1/w#1", signed),  # taken for another kind of job
        (answer_label(WORKFLOW), "run-1/w#1", signed),  # a job taken for an answer
        (WORKFLOW, "run-1/w#1", text),  # no signature at all
        (WORKFLOW, "run-1/w#1", None),
    ]
    for label, workflow_id, value in tampered:
        error = refused("SCALE010", lambda: key.open(label, workflow_id, value))  # noqa: B023
        assert "not run" in error.message


def test_a_job_signed_with_another_key_names_both_keys() -> None:
    ours, theirs = QueueKey(SECRET), QueueKey(SECRET + b"-other")
    error = refused("SCALE010", lambda: ours.open(
        WORKFLOW, "w", theirs.sign(WORKFLOW, "w", "{}")))
    assert ours.id in error.message and theirs.id in error.message
    assert SECRET.decode() not in str(error)


def test_the_key_is_found_by_variable_then_user_file_then_default(tmp_path: Path) -> None:
    config = load_config(tmp_path, env=env_of(tmp_path))
    default = tmp_path / "xdg" / "rein" / "queue.key"
    assert key_path(config, env_of(tmp_path)) == default
    named = tmp_path / "secrets" / "fleet.key"
    assert key_path(config, env_of(tmp_path, REIN_QUEUE_KEY_FILE=str(named))) == named
    user = tmp_path / "xdg" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text(f'[executor]\nkey_file = "{named}"\n')
    config = load_config(tmp_path, env=env_of(tmp_path))
    assert key_path(config, env_of(tmp_path)) == named
    key_file(named)
    assert load_key(config, env_of(tmp_path)).id == QueueKey(SECRET).id


def test_a_project_rein_toml_cannot_choose_the_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    known = key_file(ws / "known.key")  # a key anyone who cloned the repository knows
    (ws / "rein.toml").write_text(f'[executor]\nkey_file = "{known}"\n')
    config = load_config(ws, env=env_of(tmp_path))
    error = refused("SCALE009", lambda: load_key(config, env_of(tmp_path)))
    assert "project" in error.message


@pytest.mark.parametrize(("case", "why"), [
    ("missing", "cannot be opened"), ("open to others", "mode 0644"),
    ("short", "under 32"), ("symlink", "cannot be opened"), ("folder", "regular file"),
])
def test_an_unusable_key_file_is_refused_saying_why(tmp_path: Path, case: str,
                                                    why: str) -> None:
    path = tmp_path / "xdg" / "rein" / "queue.key"
    if case == "open to others":
        key_file(path, mode=0o644)
    elif case == "short":
        key_file(path, "too-short")
    elif case == "symlink":
        path.parent.mkdir(parents=True)
        path.symlink_to(key_file(tmp_path / "elsewhere.key"))
    elif case == "folder":
        path.mkdir(parents=True)
    config = load_config(tmp_path, env=env_of(tmp_path))
    error = refused("SCALE009", lambda: load_key(config, env_of(tmp_path)))
    assert why in error.message and error.hint and "--new-key" in error.hint


def test_a_new_key_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "xdg" / "rein" / "queue.key"
    assert new_key_file(path) is True
    first = path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600 and len(first.strip()) == 64
    assert new_key_file(path) is False and path.read_text() == first


def rein(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("REIN_")}
    return subprocess.run([sys.executable, "-c", REIN, *args],
                          env={**base, **env_of(tmp_path), **env}, capture_output=True,
                          text=True, timeout=240, check=False)


def test_rein_worker_new_key_writes_the_file_a_worker_then_reads(tmp_path: Path) -> None:
    done = rein(tmp_path, "worker", "--new-key", "--workspace", str(tmp_path))
    assert done.returncode == 0, done.stderr
    path = tmp_path / "xdg" / "rein" / "queue.key"
    key = QueueKey(path.read_bytes().strip())
    assert f"wrote queue key {key.id} at {path}" in done.stdout
    again = rein(tmp_path, "worker", "--new-key", "--workspace", str(tmp_path))
    assert f"kept queue key {key.id}" in again.stdout


def test_neither_a_worker_nor_a_coordinator_starts_without_a_key(tmp_path: Path,
                                                                db_url: str) -> None:
    pytest.importorskip("dbos", reason="the scale extra is not installed")
    graph = tmp_path / "g.agraph.yaml"
    graph.write_text("ags_version: '1.0'\nkind: AgenticGraph\nid: t/g\ntitle: g\n"
                     "objective: o\nentrypoints: [a]\nnodes:\n  a: {title: a, "
                     "description: d}\n")
    worker = rein(tmp_path, "worker", "--store", db_url, "--workspace", str(tmp_path))
    run = rein(tmp_path, "run", str(graph), "--executor", "dbos", "--store", db_url,
               "--workspace", str(tmp_path), "--approve", "sha256-x")
    for done in (worker, run):
        assert done.returncode == 64, done.stdout + done.stderr
        assert "SCALE009" in done.stderr and "--new-key" in done.stderr
        assert "Traceback" not in done.stderr
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:  # nothing was written
        (found,) = conn.execute("SELECT to_regclass('runs') IS NOT NULL").fetchone() or (0,)
        runs = conn.execute("SELECT count(*) FROM runs").fetchone() if found else (0,)
    assert runs == (0,)
