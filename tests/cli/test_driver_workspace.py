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
    assert (code, shown["run_id"], shown["node"]) == (0, first, "alpha")
    assert shown["also_pending"] == [f"beta (run {second})"]
    code, other = rein("next", "--json", "--run", second)
    assert (code, other["status"], other["for"]) == (3, "waiting", "driver")
    assert other["current"]["run_id"] == first
    # The second run's instruction is not handed out: answering it is refused.
    from rein.store.open import open_store
    from rein.workers.driver.current import workspace_turns

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
    assert (code, two["node"]) == (0, "right"), two
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
    _, shown = rein("next", "--json")
    assert "also_pending" not in shown  # omega is issued by the advance this submit causes
    (rein.root / "alpha.txt").write_text("done\n")
    (rein.root / ".rein" / "inbox.json").write_text(json.dumps(shown["example"]))
    exe = Path(sys.executable).parent / "rein"
    # `rein submit 2>&1 | head -0`: the reader is gone before rein prints anything.
    proc = subprocess.Popen([str(exe), "submit", *(["--json"] if as_json else [])],
                            cwd=rein.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0  # the exit code of the state it reached
    _, status = rein("next", "--json")
    assert (status["status"], status["node"]) == ("instruction", "omega"), status


def test_running_pytest_in_the_official_test_repair_loop_is_not_a_write(
        rein: Rein, shared_dir: Path) -> None:
    import shutil
    import sys

    example = shared_dir / "ags-examples" / "test-repair-loop.agraph.yaml"
    shutil.copyfile(example, rein.root / example.name)
    (rein.root / "src").mkdir()
    (rein.root / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (rein.root / "tests").mkdir()
    (rein.root / "tests" / "test_calc.py").write_text(
        "import sys\nsys.path.insert(0, 'src')\nimport calc\n\n"
        "def test_add():\n    assert calc.add(2, 2) == 4\n")
    subprocess.run(["git", "add", "."], cwd=rein.root, check=True)
    rein.start(example.name)
    code, shown = rein("next", "--json")
    assert shown["node"] == "establish_baseline"
    assert "fs:write" not in " ".join(shown["permissions"])  # a read-only node
    # The driver runs the suite once, as the node asks: pytest writes its caches.
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTHONPYCACHEPREFIX")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q"],
                          cwd=rein.root, capture_output=True, text=True, check=False, env=env)
    assert done.returncode == 1
    assert (rein.root / ".pytest_cache").is_dir()
    assert list(rein.root.rglob("__pycache__"))
    envelope = {**shown["example"], "outputs": {
        "baseline_failures": ["tests/test_calc.py::test_add"], "baseline_report": done.stdout}}
    code, status = rein.submit(envelope)
    assert code == 0, status
    assert (status["status"], status["node"]) == ("instruction", "repair_loop[0].run_tests")
    [turn_checks] = [e for e in rein("runs", "events", status["run_id"], "--json")[1].splitlines()
                     if "submit checks" in e]
    assert json.loads(turn_checks)["payload"]["data"]["ignored"]["tool_caches"] > 0


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=root, check=True, capture_output=True)


@pytest.mark.parametrize("hide", ["skip-worktree", "exclude", "no-git", "git-mv", "branch"])
def test_a_write_git_does_not_report_is_refused_at_submit(rein: Rein, hide: str) -> None:
    path = graph(rein.root, "a", "alpha")
    (rein.root / "config.toml").write_text("a = 1\n")
    if hide == "no-git":
        import shutil

        shutil.rmtree(rein.root / ".git")
    else:
        _git(rein.root, "add", ".")
        _git(rein.root, "commit", "-q", "-m", "base")
    if hide == "skip-worktree":
        _git(rein.root, "update-index", "--skip-worktree", "config.toml")
    if hide == "branch":
        _git(rein.root, "branch", "other")
        _git(rein.root, "commit", "-q", "--allow-empty", "-m", "second")
    rein.start(path)
    code, shown = rein("next", "--json")
    if hide == "git-mv":  # staged: git status shows a rename into an allowed path
        _git(rein.root, "mv", "config.toml", "alpha.txt")
    elif hide == "branch":  # HEAD stays; another branch moves
        _git(rein.root, "branch", "-f", "other", "HEAD")
    elif hide == "exclude":
        with (rein.root / ".git" / "info" / "exclude").open("a") as fh:
            fh.write("stash.txt\n")
        (rein.root / "stash.txt").write_text("hidden\n")
    elif hide in ("skip-worktree", "no-git"):
        (rein.root / "config.toml").write_text("a = 2\n")
    code, refused = rein.answer(shown)
    assert (code, refused["error"]["code"]) == (4, "DRIVER_WRITES_OUTSIDE"), refused
    if hide == "branch":
        assert refused["problems"] == ["git ref moved: refs/heads/other"]
        return
    expected = {"skip-worktree": ["config.toml"], "no-git": ["config.toml"],
                "git-mv": ["config.toml"],
                "exclude": [".git/info/exclude", "stash.txt"]}[hide]
    assert refused["problems"] == [f"written outside fs:write: {p}" for p in expected]


JUDGED = """\
  {name}:
    title: Write {name}.txt
    description: Write {name}.txt.
    outputs:
      file: {{type: file, description: the file, path_hint: {name}.txt}}
    requirements: {{permissions: ["fs:write:{name}.txt"], workspace: read_write}}
    success:
      criteria:
        - {{id: good, kind: llm_judge, description: It reads well., rubric: Score it.,
           threshold: 0.7}}
"""


def test_a_judge_score_outside_0_1_or_a_copied_example_is_refused(rein: Rein) -> None:
    path = rein.root / "j.agraph.yaml"
    path.write_text(NODE.format(name="j", entry="alpha", nodes=JUDGED.format(name="alpha")))
    rein.start(path.name)
    code, task = rein("next", "--json")
    code, judge = rein.answer(task)
    assert (code, judge["kind"]) == (0, "judge"), judge
    score = next(o for o in judge["outputs"] if o["name"] == "score")
    assert score["schema"] == {"type": "number", "minimum": 0, "maximum": 1}
    for outputs in ({"score": 7, "reasoning": "great"}, judge["example"]["outputs"]):
        code, refused = rein.submit({**judge["example"], "outputs": outputs})
        assert code == 4, refused
        assert refused["pending"]["token"] == judge["token"]  # nothing changed
    code, done = rein.submit({**judge["example"],
                              "outputs": {"score": 0.8, "reasoning": "reads well"}})
    assert (code, done["status"]) == (0, "done"), done
