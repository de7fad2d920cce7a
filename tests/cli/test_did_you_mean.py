"""Every "did you mean": a mistyped command, subcommand, option, node id, output field,
rein.toml key, profile name, run id or approval id is answered with the name meant."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import EXAMPLES

from rein.cli import main


@pytest.fixture(autouse=True)
def _isolated(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REIN_SCRIPTED_ANSWERS", raising=False)


def rein(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


# ---------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(("argv", "typo", "meant"), [
    (["grpah"], "grpah", "graph"),                   # a lazily loaded top-level command
    (["aprovals", "list"], "aprovals", "approvals"),
    (["runs", "shwo"], "shwo", "show"),              # a subcommand
    (["graph", "valdate", "x"], "valdate", "validate"),
    (["profile", "proposals", "lst"], "lst", "list"),  # a group inside a group
])
def test_an_unknown_command_names_the_one_meant(capsys: pytest.CaptureFixture[str],
                                                 argv: list[str], typo: str,
                                                 meant: str) -> None:
    code, _, err = rein(capsys, *argv)
    assert code == 64
    assert f"Error: No such command {typo!r}. Did you mean {meant!r}?" in err


def test_an_unknown_option_names_the_one_meant(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = rein(capsys, "graph", "plan", "--fromat", "dot", "x.yaml")
    assert code == 64
    assert "No such option '--fromat'. Did you mean '--format'?" in err


def test_nothing_near_is_not_guessed(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = rein(capsys, "zzzz")
    assert code == 64
    assert "No such command 'zzzz'." in err and "Did you mean" not in err


def test_with_json_the_suggestion_is_in_the_hint(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = rein(capsys, "grpah", "--json")
    assert code == 64
    assert json.loads(out)["error"]["hint"] == "did you mean 'graph'? (see `rein --help`)"


# ---------------------------------------------------------------------------- graphs


def _graph(tmp_path: Path, change: Any) -> Path:
    data = yaml.safe_load((EXAMPLES / "driver-demo.agraph.yaml").read_text())
    change(data)
    path = tmp_path / "g.agraph.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _hints(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, str]:
    code, out, _ = rein(capsys, "graph", "validate", "--json", str(path))
    assert code == 1
    return {f["code"]: f["hint"] for f in json.loads(out)["documents"][0]["findings"]}


def _depends(data: Any) -> None:
    data["nodes"]["review"]["depends_on"] = ["write_modul"]


def _entry(data: Any) -> None:
    data["entrypoints"] = ["write_modle"]


def _edge(data: Any) -> None:
    data["edges"] = [{"from": "write_module", "to": "reveiw"}]


def _read(data: Any) -> None:
    data["nodes"]["review"]["gate"]["present"] = ["nodes.write_modul.outputs.module"]


def _compensation(data: Any) -> None:
    data["nodes"]["write_module"]["failure"] = {"compensation": "reveiw"}


@pytest.mark.parametrize(("change", "code", "meant"), [
    (_depends, "AG114", "write_module"), (_entry, "AG115", "write_module"),
    (_edge, "AG113", "review"), (_read, "AG203", "write_module"),
    (_compensation, "AG113", "review"),
])
def test_a_misspelt_node_id_names_the_node(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           change: Any, code: str, meant: str) -> None:
    hints = _hints(capsys, _graph(tmp_path, change))
    assert hints[code].startswith(f"did you mean {meant!r}? (")


def test_path_on_an_output_suggests_path_hint(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def change(data: Any) -> None:
        output = data["nodes"]["write_module"]["outputs"]["module"]
        output["path"] = output.pop("path_hint")

    hints = _hints(capsys, _graph(tmp_path, change))
    assert hints["AG003"] == ("did you mean 'path_hint'? (otherwise remove the field, correct "
                              "its spelling, or prefix it with x- to make it an extension)")


def _gate_type(data: Any) -> None:
    data["nodes"]["review"]["type"] = "gaet"
    data["nodes"]["write_module"]["intelligence"]["tier"] = "minimum"


def test_a_misspelt_enumerated_value_names_the_value_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = rein(capsys, "graph", "validate", "--json", str(_graph(tmp_path, _gate_type)))
    assert code == 1
    hints = [f["hint"] for f in json.loads(out)["documents"][0]["findings"]
             if f["code"] == "AG004"]
    fix = "(use one of the values the spec lists for this field)"
    assert sorted(hints) == [f"did you mean 'gate'? {fix}", f"did you mean 'minimal'? {fix}"]


# ---------------------------------------------------------------------------- rein.toml


@pytest.mark.parametrize(("toml", "hint"), [
    ("[policy]\nproject_trsut = false\n", "did you mean 'project_trust'? (known keys: "),
    ("[limits]\nmax_deph = 3\n", "did you mean 'max_depth'? (known keys: "),
    ("[approver]\nrole = [\"x\"]\n", "did you mean 'roles'? (known keys: id, roles, "),
])
def test_an_unknown_key_names_the_key_meant(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            toml: str, hint: str) -> None:
    (tmp_path / "user.toml").write_text(toml)
    code, out, _ = rein(capsys, "config", "show", "--json")
    assert code == 64
    error = json.loads(out)["error"]
    assert error["code"] == "CFG004" and error["hint"].startswith(hint)


def test_an_unknown_section_names_the_section_meant(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rein.toml").write_text("[polcy]\nshell = \"deny\"\n")
    code, out, _ = rein(capsys, "config", "show", "--json")
    assert code == 0
    assert any("[polcy] is not a section rein reads (did you mean [policy]?)" in note
               for note in json.loads(out)["notes"])


def test_an_unknown_key_of_a_flat_section_names_the_key_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rein.toml").write_text("[driver]\ntires = [\"minimal\"]\nx-note = 1\n")
    code, out, _ = rein(capsys, "config", "show", "--json")
    assert code == 0
    notes = [n for n in json.loads(out)["notes"] if "[driver]" in n]
    assert len(notes) == 1 and "[driver] tires is not a key rein reads (did you mean " \
        "tiers?); kept as data, unused (known: clean_context_at, enabled, " in notes[0]


def test_an_unknown_tier_names_the_tier_meant(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rein.toml").write_text('[driver]\ntiers = ["standrd"]\n')
    shutil.copyfile(EXAMPLES / "driver-demo.agraph.yaml", tmp_path / "g.agraph.yaml")
    digest = rein(capsys, "graph", "digest", "g.agraph.yaml")[1].strip()
    code, _, err = rein(capsys, "run", "g.agraph.yaml", "--approve", digest)
    assert code == 64
    assert "hint: did you mean 'standard'? (tiers are minimal, standard, advanced, " \
        "frontier)" in err


# ---------------------------------------------------------------------------- profiles, runs


def test_a_misspelt_profile_name_names_the_profile(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".agents").mkdir()
    shutil.copyfile(EXAMPLES / "clock-keeper.agent.yaml",
                    tmp_path / ".agents" / "clock-keeper.agent.yaml")
    code, out, _ = rein(capsys, "profile", "show", "clock-keper", "--json")
    assert code == 1
    error = json.loads(out)["error"]
    assert error["code"] == "OAP202"
    assert error["hint"].startswith("did you mean 'clock-keeper'? (searched ")


GATED = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/gated", "title": "gated",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ok"],
    "nodes": {"ok": {"type": "gate", "title": "ok", "description": "Approve.",
                     "gate": {"mode": "approve", "prompt": "Ship it?"}}},
}


def _typo(text: str) -> str:
    """``text`` with its last character mistyped."""
    return text[:-1] + ("x" if text[-1] != "x" else "y")


def test_a_misspelt_run_or_approval_id_names_the_one_meant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(GATED))
    digest = rein(capsys, "graph", "digest", "g.agraph.yaml")[1].strip()
    code, out, _ = rein(capsys, "run", "g.agraph.yaml", "--approve", digest, "--json")
    assert code == 3
    run_id = json.loads(out.splitlines()[-1])["run_id"]
    typo = _typo(run_id)
    code, out, _ = rein(capsys, "runs", "record", typo)
    assert code == 1
    _, out, _ = rein(capsys, "runs", "show", typo, "--json")
    assert json.loads(out)["error"]["hint"].startswith(f"did you mean {run_id!r}? (")
    (pending,) = json.loads(rein(capsys, "approvals", "list", "--json")[1])["approvals"]
    approval = pending["approval_id"]
    wrong = _typo(approval)
    code, out, _ = rein(capsys, "approvals", "accept", wrong, "--json")
    assert code == 1
    assert json.loads(out)["error"]["hint"].startswith(f"did you mean {approval!r}? (")
    code, out, _ = rein(capsys, "approvals", "accept", "ok", "--json")  # the gate's node id
    assert code == 1
    assert json.loads(out)["error"]["hint"] == (
        f"'ok' is a node; the approval waiting for it is {approval}: use that id")


INPUT = {
    "ags_version": "1.0", "kind": "AgenticGraph", "id": "tests/input", "title": "input",
    "objective": "test", "requires_conformance": 3, "entrypoints": ["ask"],
    "nodes": {"ask": {"type": "gate", "title": "ask", "description": "Ask.", "gate": {
        "mode": "input", "prompt": "Which version?",
        "collect": {"version": {"type": "string", "description": "The version."}}}}},
}


def test_a_misspelt_value_name_names_the_one_meant_and_records_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.agraph.yaml").write_text(yaml.safe_dump(INPUT))
    digest = rein(capsys, "graph", "digest", "g.agraph.yaml")[1].strip()
    assert rein(capsys, "run", "g.agraph.yaml", "--approve", digest, "--json")[0] == 3
    (pending,) = json.loads(rein(capsys, "approvals", "list", "--json")[1])["approvals"]
    approval = pending["approval_id"]
    code, out, _ = rein(capsys, "approvals", "accept", approval, "--value", "verison=v1.2",
                        "--json")
    error = json.loads(out)["error"]
    assert (code, error["code"]) == (4, "APPROVAL001")
    assert error["message"] == (f"approval {approval} takes no value named 'verison'; "
                                "nothing was recorded")
    assert error["hint"] == "did you mean 'version'? (it takes version)"
    assert len(json.loads(rein(capsys, "approvals", "list", "--json")[1])["approvals"]) == 1
    code, out, _ = rein(capsys, "approvals", "accept", approval, "--value", "version=v1.2",
                        "--json")
    assert code == 0, out


# ---------------------------------------------------------------------------- cost


_PROBE = """
import contextlib, io, sys
from rein.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    main(sys.argv[1:])
print("difflib" in sys.modules, "rein.core.suggest" in sys.modules)
"""


@pytest.mark.parametrize(("argv", "difflib", "suggest"), [
    (["--help"], "False", "False"),
    (["graph", "validate", str(EXAMPLES / "no-worker.agraph.yaml")], None, "False"),
    (["grpah"], "True", "True"),
])
def test_suggestions_cost_nothing_until_a_name_is_wrong(argv: list[str], difflib: str | None,
                                                        suggest: str) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True,
                          text=True, timeout=120, check=True)
    has_difflib, has_suggest = done.stdout.split()
    assert has_suggest == suggest
    if difflib is not None:  # validating imports difflib through a dependency
        assert has_difflib == difflib


def test_a_nodes_own_output_read_as_outputs_names_self_outputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def change(data: Any) -> None:
        data["nodes"]["write_module"]["outputs"]["count"] = {"type": "integer",
                                                             "description": "lines"}
        data["nodes"]["write_module"]["success"]["criteria"].append(
            {"id": "some", "kind": "expression", "description": "at least one line",
             "expr": "outputs.count > 0"})

    hints = _hints(capsys, _graph(tmp_path, change))
    assert hints["AG203"] == "within a node, its own outputs are read as self.outputs.count"
