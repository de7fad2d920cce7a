"""``rein config trust`` / ``untrust`` / ``show``, and ``rein run`` honouring trust end to end."""

from __future__ import annotations

import json
import sys

import pytest

from rein.cli import main
from rein.config.trust import TRUST_FILE_NAME
from tests.scenarios.harness import summary
from tests.scenarios.model_env import ModelScenario, graph, ms_fixture, task

__all__ = ["ms_fixture"]  # the fixture this module's tests use

# A stand-in CLI agent (a test double): writes NOTES.md and reports its outputs as JSON.
AGENT = """\
import json, pathlib
pathlib.Path("NOTES.md").write_text("# notes\\n")
print(json.dumps({"summary": "wrote NOTES.md"}))
"""


def project(ms: ModelScenario, *extra_args: str) -> str:
    ms.file("agent.py", AGENT)
    argv = json.dumps([sys.executable, str(ms.root / "agent.py"), *extra_args])
    ms.toml(f'[policy]\nnetwork = "deny"\n\n[workers.command.fake]\nargv = {argv}\n\n'
            '[tiers.standard]\nprovider = "fake"\nmodel = "fake-agent"\n')
    node = task("Write notes", tools=[], permissions=["fs:write:NOTES.md"],
                outputs={"summary": "what"})
    return ms.graph("g.agraph.yaml", graph("trust", {"notes": node}, "notes"))


def rein(ms: ModelScenario, *args: str) -> tuple[int, str, str]:
    ms.capsys.readouterr()
    code = main(list(args))
    out = ms.capsys.readouterr()
    return code, out.out, out.err


def run(ms: ModelScenario, g: str) -> tuple[int, str, str]:
    code, digest, _ = rein(ms, "graph", "digest", g)
    assert code == 0
    return rein(ms, "run", g, "--approve", digest.strip(), "--json")


def test_a_cloned_command_worker_runs_only_after_trust(ms: ModelScenario) -> None:
    g = project(ms)
    code, out, _ = run(ms, g)
    assert code == 4, out  # refused before anything runs
    assert not (ms.root / "NOTES.md").exists()
    error = json.loads(out)["error"]
    assert error["code"] == "CFG015" and "which is untrusted" in error["message"]
    assert error["hint"] == f"review and trust it: rein config trust --workspace {ms.root}"

    code, out, _ = rein(ms, "config", "trust", "--json")
    shown = json.loads(out)
    assert code == 4 and shown["trusted"] is False and shown["state"] == "untrusted"
    assert shown["error"]["code"] == "CFG014"
    [section] = shown["sections"]
    assert section["kind"] == "command worker"
    assert section["detail"] == f"{sys.executable} {ms.root / 'agent.py'}"
    code, out, _ = rein(ms, "config", "trust", "--digest", shown["digest"])
    assert code == 0 and out == f"trusted {ms.root / 'rein.toml'} at {shown['digest']}\n"

    code, out = ms.run(g)
    assert code == 0, out
    assert summary(out)["status"] == "succeeded"
    assert (ms.root / "NOTES.md").read_text() == "# notes\n"

    (ms.root / "NOTES.md").unlink()
    project(ms, "--extra")  # the command line changed: the trust is void
    code, out, _ = run(ms, g)
    assert code == 4 and not (ms.root / "NOTES.md").exists()
    assert "which is changed" in json.loads(out)["error"]["message"]


def test_a_node_naming_an_untrusted_worker_waits_with_one_notice(ms: ModelScenario) -> None:
    ms.file("agent.py", AGENT)
    ms.toml(f'[workers.command.fake]\nargv = {json.dumps([sys.executable, "agent.py"])}\n')
    node = task("Write notes", tools=[], permissions=["fs:write:NOTES.md"],
                outputs={"summary": "what"})
    node["x-rein-worker"] = "command/fake"
    code, out, err = run(ms, ms.graph("g.agraph.yaml", graph("named", {"notes": node},
                                                             "notes")))
    assert code == 3, out  # nobody may serve it: the run waits instead of running the command
    assert not (ms.root / "NOTES.md").exists()
    assert err.count("notice: ") == 1
    assert err.startswith(f"notice: {ms.root / 'rein.toml'} is not trusted; ignoring "
                          f"workers.command.fake; review and trust it with: rein config trust "
                          f"--workspace {ms.root}\n")


def test_trust_without_a_digest_off_a_terminal_shows_and_refuses(ms: ModelScenario) -> None:
    project(ms)
    code, out, err = rein(ms, "config", "trust")
    assert code == 4
    assert out.startswith(f"{ms.root / 'rein.toml'} (untrusted) would add:\n")
    assert "  command worker  workers.command.fake: " in out
    assert "CFG014" in err and "--digest sha256:" in err
    trust_file = ms.root / ".home" / ".config" / "rein" / TRUST_FILE_NAME
    assert not trust_file.exists()
    code, out, _ = rein(ms, "config", "trust", "--digest", "sha256:" + "0" * 64)
    assert code == 4 and not trust_file.exists()


def test_show_marks_untrusted_sections_and_untrust_forgets(ms: ModelScenario) -> None:
    project(ms)
    code, out, _ = rein(ms, "config", "show")
    assert code == 0
    assert f"# untrusted, ignored: workers.command.fake: {sys.executable}" in out
    assert 'policy.network = "deny"' in out  # narrowing applies regardless
    code, out, _ = rein(ms, "config", "show", "--json")
    shown = json.loads(out)
    assert shown["project_trust"]["state"] == "untrusted"
    assert not any(k.startswith("workers.command") for k in shown["values"])

    digest = shown["project_trust"]["digest"]
    assert rein(ms, "config", "trust", "--digest", digest)[0] == 0
    shown = json.loads(rein(ms, "config", "show", "--json")[1])
    assert shown["project_trust"]["state"] == "trusted"
    assert shown["values"]["workers.command.fake.argv"][0] == sys.executable

    code, out, _ = rein(ms, "config", "untrust", "--json")
    assert code == 0 and json.loads(out) == {"path": str(ms.root / "rein.toml"),
                                             "removed": True}
    code, out, _ = rein(ms, "config", "untrust")
    assert code == 0 and out == f"was not trusted: {ms.root / 'rein.toml'}\n"
    assert json.loads(rein(ms, "config", "show", "--json")[1])["project_trust"]["state"] \
        == "untrusted"


def test_a_managed_ban_refuses_trust(ms: ModelScenario) -> None:
    project(ms)
    managed = ms.root / ".etc" / "rein.toml"
    managed.parent.mkdir(parents=True)
    managed.write_text("[policy]\nproject_trust = false\n")
    digest = json.loads(rein(ms, "config", "show", "--json")[1])["project_trust"]["digest"]
    code, _, err = rein(ms, "config", "trust", "--digest", digest)
    assert code == 4 and "CFG010" in err


def test_nothing_to_trust(ms: ModelScenario) -> None:
    ms.toml('[policy]\nshell = "deny"\n[providers.script]\nkind = "scripted"\n')
    code, out, _ = rein(ms, "config", "trust")
    assert code == 0 and out.endswith("defines nothing that needs trust; nothing recorded\n")
    code, out, err = rein(ms, "config", "trust", "--workspace", str(ms.root / "absent"))
    assert code == 64 and "CFG013" in err


@pytest.mark.parametrize("command", ["trust", "untrust", "show"])
def test_help_has_an_example_and_exit_codes(command: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "Example:" in text and "Exit codes:" in text


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("n\n", 4), ("\n", 4)])
def test_trust_on_a_terminal_asks_first(ms: ModelScenario, answer: str, code: int) -> None:
    import io

    import rein.cli.config as config_cli

    project(ms)
    ms.monkeypatch.setattr(config_cli, "_interactive", lambda: True)
    ms.monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    got, out, _ = rein(ms, "config", "trust")
    assert got == code
    assert "workers.command.fake" in out and "Trust these definitions? [y/N]" in out
    state = json.loads(rein(ms, "config", "show", "--json")[1])["project_trust"]["state"]
    assert state == ("trusted" if code == 0 else "untrusted")


@pytest.mark.parametrize("scope", ["project", "user"])
def test_show_and_trust_refuse_a_key_written_in_the_file_and_never_print_it(
        ms: ModelScenario, scope: str) -> None:
    text = '[providers.x]\nkind = "openai"\napi_key = "sk-written-here"\n'
    if scope == "project":
        ms.toml(text)
    else:
        user = ms.root / ".home" / ".config" / "rein" / "rein.toml"
        user.parent.mkdir(parents=True, exist_ok=True)
        user.write_text(text)
    for args in (["config", "show"], ["config", "show", "--json"], ["config", "trust", "--json"]):
        code, out, err = rein(ms, *args)
        assert code == 64, (args, out)
        assert "PROVCFG002" in out + err
        assert "sk-written-here" not in out + err


def test_show_refuses_a_malformed_command_worker_even_before_trust(ms: ModelScenario) -> None:
    ms.toml('[workers.command.x]\nargv = "claude -p {prompt}"\n')
    code, out, err = rein(ms, "config", "show")
    assert code == 64 and "WORKERCFG002" in err and out == ""


def test_the_group_help_gives_the_exit_code_of_an_invalid_file(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--help"]) == 0
    assert "64 usage error or an invalid rein.toml" in capsys.readouterr().out


def test_show_lists_no_empty_table_for_what_was_withheld(ms: ModelScenario) -> None:
    ms.toml('[mcp]\ntrusted = ["mcp-server-time"]\n[store]\nurl = "postgresql://h/db"\n')
    code, out, _ = rein(ms, "config", "show")
    assert code == 0
    assert "mcp = {}" not in out and "store = {}" not in out
    assert "# untrusted, ignored: store.url: postgresql://h/db" in out
    assert "mcp.trusted ignored" in out
    values = json.loads(rein(ms, "config", "show", "--json")[1])["values"]
    assert {} not in values.values()
