"""A console over a temporary workspace, served in-process through Starlette's TestClient.

The console is the real one (its Harness, its Steering thread, its Guard); only the
worker is the package's scripted one, as in every other scenario test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("starlette", reason="the web extra (Starlette) is not installed")
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient

from rein.engine.service import Harness
from rein.web.app import create_app
from rein.web.auth import COOKIE, Guard
from rein.web.steer import Steering

TOKEN = "t" * 40
ORIGIN = "http://testserver"

GATED = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/web-gated", "title": "gated",
    "objective": "test", "requires_conformance": 3, "constraints": {"max_cost_usd": 1.0},
    "entrypoints": ["work"],
    "nodes": {
        "work": {"title": "work", "description": "Do it."},
        "ok": {"type": "gate", "title": "ok", "description": "Approve.", "depends_on": ["work"],
               "gate": {"mode": "approve", "prompt": "Ship it?"}},
        "ask": {"type": "gate", "title": "ask", "description": "Say.", "depends_on": ["ok"],
                "gate": {"mode": "input", "prompt": "How many?",
                         "collect": {"count": {"type": "integer", "description": "n"}}}},
    },
}


@dataclass
class Console:
    root: Path
    client: Any  # starlette.testclient.TestClient
    steering: Steering | None
    harness: Harness
    guard: Guard

    def login(self) -> None:
        r = self.client.get(f"/?token={TOKEN}", follow_redirects=False)
        assert r.status_code == 303, r.text

    def csrf(self) -> str:
        return self.guard.csrf(self.client.cookies[COOKIE])

    def post(self, path: str, data: dict[str, str], *, origin: str | None = ORIGIN,
             csrf: bool = True) -> Any:
        form = {**({"csrf": self.csrf()} if csrf else {}), **data}
        headers = {"origin": origin} if origin else {}
        return self.client.post(path, data=form, headers=headers, follow_redirects=False)

    def digest(self, name: str) -> str:
        from rein.formats.ags import validate_path

        return str(validate_path(str(self.root / name)).digest)

    def start(self, name: str) -> str:
        r = self.post("/plan/run", {"path": name, "digest": self.digest(name)})
        assert r.status_code == 303, r.text
        assert self.steering is not None and self.steering.idle(60)
        return str(r.headers["location"]).rsplit("/", 1)[-1]

    def start_with(self, form: dict[str, str]) -> str:
        """Approve and run with the plan form's fields; the new run's id."""
        r = self.post("/plan/run", form)
        assert r.status_code == 303, r.text
        assert self.steering is not None and self.steering.idle(60)
        return str(r.headers["location"]).rsplit("/", 1)[-1]

    def pending(self) -> list[Any]:
        return self.harness.approvals()


def write_graph(root: Path, name: str, data: dict[str, Any]) -> None:
    (root / name).write_text(yaml.safe_dump(data, sort_keys=False))


def make_console(root: Path, *, read_only: bool = False,
                 store_url: str | None = None) -> Iterator[Console]:
    # Skipped, not failed, where the web extra is not installed.
    pytest.importorskip("starlette", reason="the web extra (Starlette) is not installed")
    pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")


    # As `rein serve` opens them: answers and starts are recorded as given on the web.
    harness = Harness.open(root, store_url=store_url, surface="web")
    steering = None if read_only else Steering(
        lambda listeners: Harness.open(root, store_url=store_url, listeners=listeners,
                                       surface="web"))
    guard = Guard(token=TOKEN, hosts=frozenset({"testserver"}), read_only=read_only)
    app = create_app(harness, guard, steering)
    with TestClient(app) as client:
        yield Console(root=root, client=client, steering=steering, harness=harness,
                      guard=guard)
    if steering is not None:
        steering.close()
    harness.close()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REIN_USER_CONFIG", str(tmp_path / "no-user.toml"))
    answers = tmp_path / "answers.yaml"
    answers.write_text(yaml.safe_dump({"nodes": {"work": [{"outputs": {}}]}}))
    monkeypatch.setenv("REIN_SCRIPTED_ANSWERS", str(answers))
    write_graph(tmp_path, "g.agraph.yaml", GATED)
    return tmp_path


@pytest.fixture
def console(workspace: Path) -> Iterator[Console]:
    yield from make_console(workspace)


def sse_events(text: str) -> list[dict[str, Any]]:
    """The data of each message of an SSE body (comments and named events left out)."""
    out = []
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if any(line.startswith("event:") for line in lines):
            continue
        for line in lines:
            if line.startswith("data:"):
                out.append(json.loads(line[5:]))
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium for a module's browser tests (each module skips without one)."""
    from tests.web.browser import launched

    with launched() as b:
        yield b
