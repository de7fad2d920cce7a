"""rein.toml: three files, lower ones only narrow, every value has a source."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from rein.cli import main
from rein.config import files as config_files
from rein.config import load_config
from rein.config.trusting import trust_project
from rein.errors import ConfigError


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    return {"ws": ws, "managed": tmp_path / "etc" / "rein.toml",
            "user": tmp_path / "xdg" / "rein" / "rein.toml", "project": ws / "rein.toml"}


def env_for(files: dict[str, Path]) -> dict[str, str]:
    return {"REIN_MANAGED_CONFIG": str(files["managed"]),
            "XDG_CONFIG_HOME": str(files["user"].parent.parent), "HOME": "/nonexistent"}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_lower_files_only_narrow(files: dict[str, Path]) -> None:
    write(files["managed"], '[policy]\nshell = "ask"\ntools = ["read", "mcp/**"]\n'
          'max_turns = 50\nabsolute_paths = false\nread_roots = ["."]\n'
          '[limits]\nmax_depth = 64\n')
    write(files["user"], '[policy]\nshell = "allow"\nmax_turns = 80\n'
          'deny_tools = ["mcp/x/*"]\n')
    write(files["project"], '[policy]\nshell = "allow"\ntools = ["**", "edit"]\n'
          'max_turns = 20\nabsolute_paths = true\nread_roots = ["src", "../up"]\n'
          'deny_tools = ["fetch"]\n[limits]\nmax_depth = 500\n'
          '[tiers.standard]\nmodel = "acme/m1"\n[custom]\nkey = 1\n')
    cfg = load_config(files["ws"], env=env_for(files))
    policy = cfg.policy
    assert policy["shell"] == "ask" and policy["max_turns"] == 20
    assert policy["tools"] == ["read", "mcp/**"]  # the project's ** cannot widen
    assert policy["absolute_paths"] is False and policy["read_roots"] == ["src"]
    assert policy["deny_tools"] == ["mcp/x/*", "fetch"]
    assert cfg.limits.max_depth == 64
    assert cfg.get("tiers") == {"standard": {"model": "acme/m1"}}
    assert cfg.get("custom") == {"key": 1}
    assert cfg.sources["policy.shell"] == (str(files["managed"]),)
    assert cfg.sources["policy.max_turns"] == (str(files["project"]),)
    assert any("cannot widen" in n for n in cfg.notes)


def test_hooks_are_unioned_and_a_higher_definition_wins(files: dict[str, Path]) -> None:
    write(files["user"], '[hooks.redact]\ncommand = ["safe"]\n')
    write(files["project"], '[hooks.redact]\ncommand = ["evil"]\n[hooks.lint]\ncommand = "l"\n')
    assert set(load_config(files["ws"], env=env_for(files)).hooks) == {"redact"}  # untrusted
    trust_project(files["ws"], env=env_for(files))
    cfg = load_config(files["ws"], env=env_for(files))
    assert cfg.hooks["redact"].command == ("safe",)  # trusted or not, a higher file wins
    assert cfg.hooks["lint"].command == ("l",)
    write(files["managed"], "[policy]\nproject_hooks = false\n")
    assert "lint" not in load_config(files["ws"], env=env_for(files)).hooks


@pytest.mark.parametrize("text,line", [("[policy\nshell = 1\n", 1),
                                       ('[policy]\ndefault = "ask"\nshell = "maybe"\n', 3),
                                       ('[policy]\nsudo = true\n', 2),
                                       ('[mcp]\ntrusted = "mcp-server-time"\n', 2),
                                       ('[mcp]\ntrusted = [["mcp-server-time"]]\n', 2),
                                       ('limits = 5\n', 1),
                                       ('providers = "x"\n[store]\nurl = "x.db"\n', 1),
                                       ('tiers = ["a"]\n', 1), ('dev = 1\n', 1)])
def test_bad_files_name_the_file_and_line(files: dict[str, Path], text: str, line: int) -> None:
    write(files["project"], text)
    with pytest.raises(ConfigError) as info:
        load_config(files["ws"], env=env_for(files))
    assert info.value.location.file == str(files["project"])
    assert info.value.location.line == line
    assert info.value.code in ("CFG003", "CFG004")


def test_a_table_below_a_value_of_the_same_name_replaces_it(files: dict[str, Path]) -> None:
    # Not a section rein reads (kept as data), a value in one file and a table in another.
    write(files["user"], 'x-notes = "see the wiki"\n')
    write(files["project"], '[x-notes.release]\nowner = "ops"\n')
    assert load_config(files["ws"], env=env_for(files)).get("x-notes") == {
        "release": {"owner": "ops"}}


def test_xdg_and_overrides(files: dict[str, Path], tmp_path: Path) -> None:
    write(files["user"], '[driver]\nmode = "x"\n')
    assert load_config(files["ws"], env=env_for(files)).get("driver") == {"mode": "x"}
    other = tmp_path / "other.toml"
    write(other, '[driver]\nmode = "y"\n')
    env = env_for(files) | {"REIN_USER_CONFIG": str(other)}
    assert load_config(files["ws"], env=env).get("driver") == {"mode": "y"}


def test_config_show_json(files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in env_for(files).items():
        monkeypatch.setenv(key, value)
    write(files["project"], '[policy]\nshell = "deny"\n[store]\nurl = "sqlite"\n')
    assert main(["config", "show", "--json", "--workspace", str(files["ws"])]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["values"]["policy.shell"] == "deny"
    assert shown["sources"]["policy.shell"] == [str(files["project"])]
    assert shown["sources"]["policy.edit"] == ["default"]
    assert shown["values"]["store.url"] == "sqlite"
    write(files["project"], "[policy\n")
    assert main(["config", "show", "--workspace", str(files["ws"])]) == 64


def _doc_blocks() -> list[str]:
    page = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
    return re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


@pytest.mark.parametrize("block", _doc_blocks(), ids=lambda b: b.split("\n", 1)[0])
def test_every_example_of_the_configuration_page_works_as_written(
        block: str, files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Each rein.toml example on docs/configuration.md, as the user file: accepted, and
    every value it sets is shown as coming from that file."""
    for key, value in env_for(files).items():
        monkeypatch.setenv(key, value)
    # The user file here is the account's own, as with no variable set: [approver] counts.
    monkeypatch.setattr(config_files, "authority_paths",
                        lambda: [("managed", files["managed"]), ("user", files["user"])])
    write(files["user"], block)
    assert main(["config", "show", "--json", "--workspace", str(files["ws"])]) == 0
    shown = json.loads(capsys.readouterr().out)
    written = set(_flat(tomllib.loads(block)))
    assert written and written <= set(shown["values"])
    assert all(shown["sources"][k] == [str(files["user"])] for k in written)


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_unknown_sections_are_noted_with_a_guess(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "rein.toml").write_text('[telemetri]\notel = true\n[x-acme]\nk = 1\n[custom]\nk = 2\n')
    env = {"REIN_MANAGED_CONFIG": str(tmp_path / "none.toml"),
           "REIN_USER_CONFIG": str(tmp_path / "none-user.toml")}
    cfg = load_config(ws, env=env)
    notes = [n for n in cfg.notes if "is not a section rein reads" in n]
    assert len(notes) == 2
    assert "[telemetri]" in notes[0] and "did you mean [telemetry]?" in notes[0]
    assert "[custom]" in notes[1] and "did you mean" not in notes[1]
    assert cfg.get("x-acme") == {"k": 1} and cfg.get("custom") == {"k": 2}


def test_tier_entries_no_route_is_made_of_are_noted(tmp_path: Path) -> None:
    """[tiers] entries that make no route are noted where they are written (a name that is
    not a tier, a value that is not a table, a key a tier's table does not have) and, all
    files merged, a tier table that names no model; a table split across files is a route."""
    ws = tmp_path / "ws"
    ws.mkdir()
    user = tmp_path / "user.toml"
    user.write_text('[tiers.standard]\nmodel = "m"\n')
    (ws / "rein.toml").write_text(
        '[tiers]\nminimal = "p/m"\n[tiers.standard]\nprovider = "p"\n'
        '[tiers.advnced]\nmodel = "m"\n[tiers.frontier]\nprovider = "p"\nmodle = "m"\n'
        '[tiers.x-mine]\nk = 1\n')
    env = {"REIN_MANAGED_CONFIG": str(tmp_path / "none.toml"), "REIN_USER_CONFIG": str(user)}
    cfg = load_config(ws, env=env)
    tiers = [n for n in cfg.notes if "tiers" in n]
    assert len(tiers) == 4, tiers
    assert "tiers.minimal is not a table; not a route" in tiers[0]
    assert "[tiers.advnced] is not a tier (did you mean [tiers.advanced]?)" in tiers[1]
    assert "[tiers.frontier] modle is not a key rein reads (did you mean model?)" in tiers[2]
    assert tiers[3].startswith("[tiers.frontier] names no model in any rein.toml")
    assert cfg.get("tiers")["standard"] == {"model": "m", "provider": "p"}  # a route: no note
