"""One workspace, several instructions waiting: one is current, and each one's writes are
its own. Slips the engine would end the run for are refused at submit instead."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main

NODE = """\
ags_version: "1.0"
kind: AgenticGraph
id: ws/{name}
title: Write {name}.txt
objective: Write one file.
constraints: {{max_cost_usd: 1}}
entrypoints: [{entry}]
nodes:
{nodes}
"""
WRITE = """\
  {name}:
    title: Write {name}.txt
    description: Write {name}.txt.
    outputs:
      file: {{type: file, description: the file, path_hint: {name}.txt}}
    requirements: {{permissions: ["fs:write:{name}.txt"], workspace: read_write}}
"""


def graph(root: Path, name: str, *nodes: str, chain: bool = False) -> str:
    """A graph of nodes that each write ``<node>.txt``: in parallel, or one after another."""
    body = ""
    for i, n in enumerate(nodes):
        body += WRITE.format(name=n)
        if chain and i:
            body += f"    depends_on: [{nodes[i - 1]}]\n"
    path = root / f"{name}.agraph.yaml"
    entry = nodes[0] if chain else ", ".join(nodes)
    path.write_text(NODE.format(name=name, entry=entry, nodes=body))
    return path.name


class Rein:
    def __init__(self, root: Path, capsys: Any) -> None:
        self.root, self.capsys = root, capsys

    def __call__(self, *args: str) -> tuple[int, Any]:
        self.capsys.readouterr()
        code = main(list(args))
        out = self.capsys.readouterr().out
        try:
            return code, json.loads(out)
        except json.JSONDecodeError:
            return code, out

    def start(self, path: str) -> str:
        code, digest = self("graph", "digest", path)
        assert code == 0
        code, out = self("run", path, "--approve", digest.strip(), "--json")
        assert code == 3, out
        return [json.loads(line) for line in out.splitlines()][-1]["run_id"]

    def submit(self, envelope: dict[str, Any], *args: str) -> tuple[int, Any]:
        (self.root / ".rein" / "inbox.json").write_text(json.dumps(envelope))
        return self("submit", "--json", *args)

    def answer(self, instruction: dict[str, Any]) -> tuple[int, Any]:
        """Do the work of ``instruction`` (write its file) and submit it."""
        (self.root / f"{instruction['node']}.txt").write_text("done\n")
        return self.submit(instruction["example"])


@pytest.fixture
def rein(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Rein:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return Rein(tmp_path, capsys)


def test_two_runs_in_one_workspace_agree_on_the_current_one_and_keep_their_writes(
        rein: Rein) -> None:
    one, two = graph(rein.root, "a", "alpha"), graph(rein.root, "b", "beta")
    first = rein.start(one)
    second = rein.start(two)
    code, shown = rein("next", "--json")
    assert (code, shown["run_id"], shown["node"]) == (3, first, "alpha")
    assert shown["also_pending"] == [f"beta (run {second})"]
    code, other = rein("next", "--json", "--run", second)
    assert (code, other["status"], other["for"]) == (3, "waiting", "driver")
    assert other["current"]["run_id"] == first
    # The second run's instruction is not handed out: answering it is refused.
    from rein.store.open import open_store
    from rein.workers.driver_current import workspace_turns

    store = open_store(rein.root, create=False)
    beta = workspace_turns(store, rein.root)[1]
    store.close()
    code, refused = rein.submit(dict(beta.instruction["example"]))
    assert (code, refused["error"]["code"]) == (4, "DRIVER_NOT_CURRENT")
    code, after = rein.answer(shown)
    assert code == 0, after["problems"]  # the first run is done
    code, shown = rein("next", "--json")
    assert (shown["run_id"], shown["node"]) == (second, "beta")
    code, done = rein.answer(shown)
    assert (code, done["status"]) == (0, "done"), done  # alpha.txt is not blamed on beta


def test_parallel_nodes_are_handed_out_one_at_a_time_with_their_own_writes(rein: Rein
                                                                           ) -> None:
    rein.start(graph(rein.root, "p", "left", "right"))
    code, one = rein("next", "--json")
    assert one["node"] == "left" and one["also_pending"] == ["right"]
    code, two = rein.answer(one)
    assert (code, two["node"]) == (3, "right"), two
    code, done = rein.answer(two)
    assert (code, done["status"]) == (0, "done"), done  # left.txt is not right's write


def test_an_output_path_that_does_not_exist_is_refused_with_nothing_changed(rein: Rein
                                                                            ) -> None:
    rein.start(graph(rein.root, "a", "alpha"))
    code, shown = rein("next", "--json")
    code, refused = rein.submit(shown["example"])  # alpha.txt was never written
    assert (code, refused["error"]["code"]) == (4, "RT031")
    assert "alpha.txt" in refused["error"]["message"]
    assert refused["pending"]["token"] == shown["token"]
    code, done = rein.answer(shown)
    assert (code, done["status"]) == (0, "done")


@pytest.mark.parametrize("as_json", [False, True])
def test_a_closed_output_pipe_does_not_interrupt_the_advance(rein: Rein, as_json: bool) -> None:
    import sys

    rein.start(graph(rein.root, "a", "alpha", "omega", chain=True))
    code, shown = rein("next", "--json")
    assert "also_pending" not in shown  # omega is issued by the advance this submit causes
    (rein.root / "alpha.txt").write_text("done\n")
    (rein.root / ".rein" / "inbox.json").write_text(json.dumps(shown["example"]))
    exe = Path(sys.executable).parent / "rein"
    # `rein submit 2>&1 | head -0`: the reader is gone before rein prints anything.
    proc = subprocess.Popen([str(exe), "submit", *(["--json"] if as_json else [])],
                            cwd=rein.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == 3  # the exit code of the state it reached
    code, status = rein("next", "--json")
    assert (status["status"], status["node"]) == ("instruction", "omega"), status
