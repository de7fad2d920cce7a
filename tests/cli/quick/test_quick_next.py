"""``rein next``'s plain forms skip click: the same bytes and exit code as the click command,
and everything else is left to click."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, account_files

from rein.cli import main
from rein.cli.app import cli
from rein.cli.quick.next import quick_next

DEMO = ROOT / "examples" / "driver-demo.agraph.yaml"
REIN = str(Path(sys.executable).parent / "rein")


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A workspace (the current directory) whose demo run waits for the driver: its run id."""
    shutil.copy(DEMO, tmp_path / DEMO.name)
    digest = subprocess.run([REIN, "graph", "digest", DEMO.name], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout.strip()
    done = subprocess.run([REIN, "run", DEMO.name, "--approve", digest, "--json"],
                          cwd=tmp_path, check=False, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    monkeypatch.chdir(tmp_path)
    return str(json.loads(done.stdout.strip().splitlines()[-1])["run_id"])


def _through_click(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args=["next", *args], prog_name="rein", standalone_mode=False)
    return int(code), capsys.readouterr().out


@pytest.mark.parametrize("form", [[], ["--json"], ["--run", "RUN"], ["--run", "RUN", "--json"],
                                  ["--json", "--run", "RUN"]])
def test_the_quick_path_prints_what_the_click_command_prints(
        waiting: str, form: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = [waiting if a == "RUN" else a for a in form]
    expected = _through_click(args, capsys)
    assert quick_next(args) == expected[0] == 0
    assert capsys.readouterr().out == expected[1]
    assert main(["next", *args]) == 0 and capsys.readouterr().out == expected[1]


@pytest.mark.parametrize("form", [["--help"], ["--workspace", "."], ["--store", "x.db"],
                                  ["--run"], ["--run", "--json"], ["--json", "--json"],
                                  ["--verbose"], ["--run", "a", "--run", "b"]])
def test_other_forms_are_left_to_click(waiting: str, form: list[str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert quick_next(form) is None
    assert capsys.readouterr().out == ""  # nothing printed: click answers alone


def test_an_error_is_reported_by_click_with_its_hint(waiting: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert quick_next(["--run", "run-nope"]) is None
    assert main(["next", "--run", "run-nope"]) == 1
    assert "RUN404" in capsys.readouterr().err


def test_no_store_is_reported_by_click(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert quick_next([]) is None
    assert main(["next"]) == 1
    assert "start one with `rein run GRAPH --approve DIGEST`" in capsys.readouterr().err
    assert not (tmp_path / ".rein").exists()  # a read: nothing was created


def test_no_store_beside_a_brief_names_the_flows_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # An agent told to build the brief in specs/ is pointed at the flows, not at a graph.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "brief.md").write_text("A CLI that converts temperatures\n")
    assert main(["next"]) == 1
    err = capsys.readouterr().err
    assert "STORE404" in err
    assert "start a flow on the briefs in specs/: `rein spec`" in err and "`rein dev`" in err


def test_text_with_terminal_escapes_goes_through_click(
        waiting: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # click strips escape sequences from what it prints to a pipe; the quick path would not,
    # so such text is left to click (rein's loader refuses them in graphs; this is a guard).
    from rein.workers.driver import render

    monkeypatch.setattr(render, "render", lambda status: "\x1b[31mred\x1b[0m")
    assert quick_next([]) is None and capsys.readouterr().out == ""
    assert quick_next(["--json"]) == 0  # JSON escapes every control character
    assert "instruction" in capsys.readouterr().out


RIGHT = 'def greet(name):\n    """Greet."""\n    return f"Hello, {name}!"\n'


@pytest.mark.parametrize("state", ["approval", "cancelled"])
@pytest.mark.parametrize("form", [[], ["--json"]])
def test_a_wait_and_an_end_print_what_the_click_command_prints(
        waiting: str, state: str, form: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    # Answered by the cold read (rein.workers.driver.glance), as an instruction is: the
    # same bytes and exit code as the click command, which reads through the Harness.
    if state == "approval":
        assert quick_next(["--json"]) == 0
        example = json.loads(capsys.readouterr().out)["example"]
        Path("greet.py").write_text(RIGHT)
        Path(".rein/inbox.json").write_text(json.dumps(example))
        assert main(["submit"]) == 3
    else:
        assert main(["runs", "cancel", waiting]) == 1
    capsys.readouterr()
    expected = _through_click(form, capsys)
    assert quick_next(form) == expected[0] == (3 if state == "approval" else 1)
    assert capsys.readouterr().out == expected[1]


# Beside a rein.toml that leaves the answer alone, the cold read answers
# (rein.workers.driver.glance_config): the plain TOML it reads itself, the rest tomllib.
SETTLED = {
    "plain": {"project": '[driver]\ntiers = ["standard", "deep"]\n[policy]\nshell = "ask"\n'
                         "max_cost_usd = 2.5\n[limits]\nmax_bytes = 1\n[store]\n",
              "user": '[providers.openai]\nkind = "openai"\n[policy]\nnetwork = "deny"\n',
              "account": '[approver]\nid = "ana@example.org"\nroles = ["maintainer"]\n'},
    "tomllib": {"project": '[tiers]\nstandard = { provider = "p", model = "m" }\n'
                           '[x-notes]\nwhen = 2026-01-01\nesc = "a\\tb"\n'},
}


@pytest.fixture
def places(waiting: str, tmp_path_factory: pytest.TempPathFactory,
           monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Where rein reads its configuration, outside the workspace and the real home: the
    project's file, the user's, and the account's own approver file (for both reads)."""
    from rein.workers.driver import glance

    root = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("REIN_USER_CONFIG", str(root / "user.toml"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(root / "etc" / "rein.toml"))
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    managed, user = account_files(monkeypatch, root)
    monkeypatch.setattr(glance, "authority_files",
                        lambda: [("managed", str(managed)), ("user", str(user))])
    user.parent.mkdir(parents=True)
    return {"project": Path("rein.toml").resolve(), "user": root / "user.toml",
            "account": user}


def _not_the_harness(run_id: str | None) -> None:
    raise AssertionError("answered through the Harness")


@pytest.mark.parametrize("form", [[], ["--json"], ["--run", "RUN", "--json"]])
@pytest.mark.parametrize("state", ["instruction", "approval", "cancelled"])
@pytest.mark.parametrize("files", SETTLED.values(), ids=SETTLED)
def test_beside_a_rein_toml_the_quick_path_prints_what_the_click_command_prints(
        waiting: str, places: dict[str, Path], files: dict[str, str], state: str,
        form: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from rein.cli.quick import next as quick

    if state == "approval":
        assert quick_next(["--json"]) == 0
        Path("greet.py").write_text(RIGHT)
        Path(".rein/inbox.json").write_text(json.dumps(
            json.loads(capsys.readouterr().out)["example"]))
        assert main(["submit"]) == 3
    elif state == "cancelled":
        assert main(["runs", "cancel", waiting]) == 1
    for place, text in files.items():  # written once the run is where the test wants it
        places[place].write_text(text)
    capsys.readouterr()
    args = [waiting if a == "RUN" else a for a in form]
    expected = _through_click(args, capsys)  # through the Harness, which reads the files
    monkeypatch.setattr(quick, "_through_the_harness", _not_the_harness)
    assert quick_next(args) == expected[0] == {"instruction": 0, "approval": 3,
                                               "cancelled": 1}[state]
    assert capsys.readouterr().out == expected[1]


@pytest.mark.parametrize("place,text,code,exit_code", [
    ("project", '[policy]\nshell = "sometimes"\n', "CFG004", 64),
    ("project", "[store]\nurl = 'elsewhere.db'\n", "STORE404", 1),
    ("project", "[x]\nn = inf\n", "CFG003", 64),
    ("user", "[limits]\nmax_depth = 0\n", "CFG004", 64),
    ("account", '[approver]\nid = ""\n', "CFG004", 64),
])
def test_beside_a_rein_toml_the_harness_refuses_click_says_why(
        waiting: str, places: dict[str, Path], place: str, text: str, code: str,
        exit_code: int, capsys: pytest.CaptureFixture[str]) -> None:
    places[place].write_text(text)
    assert quick_next([]) is None and capsys.readouterr().out == ""
    assert main(["next"]) == exit_code
    assert code in capsys.readouterr().err
