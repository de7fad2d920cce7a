"""Configurations: declared in a file, resolved through extends, digest-bound, diffable,
and refused with a code before anything runs when they cannot work."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from eval_support import SUITE, run_eval

from rein.errors import ConfigError
from rein.eval.configs import area, builtin, diff, load_configurations, select

BASE = """
[configurations.base]
description = "the base"
[configurations.base.rein]
policy = { shell = "allow" }
[configurations.base.rein.providers.p]
kind = "scripted"
options = { script = "{scenario}/model.json" }
[configurations.base.rein.tiers.standard]
provider = "p"
model = "m"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "eval.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_extends_lays_a_configuration_over_another(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + """
[configurations.hooked]
extends = "base"
instructions = "Be brief."
[configurations.hooked.rein.hooks.h]
command = ["true"]
events = ["PreToolUse"]
matcher = "shell"
[configurations.hooked.rein.tiers.standard]
model = "other"
""")
    configs = load_configurations(path)
    hooked = configs["hooked"].definition
    assert hooked["rein"]["tiers"]["standard"] == {"provider": "p", "model": "other"}
    assert hooked["rein"]["policy"] == {"shell": "allow"}
    assert hooked["instructions"] == "Be brief." and configs["base"].definition[
        "instructions"] is None
    changed = {d["key"] for d in diff(configs["base"], configs["hooked"])}
    assert changed == {"instructions", "rein.tiers.standard.model", "rein.hooks.h.command",
                       "rein.hooks.h.events", "rein.hooks.h.matcher"}
    assert {area(k) for k in changed} == {"prompt", "routing", "hooks"}
    assert configs["hooked"].worker == "scripted" and configs["base"].worker == "scripted"


def test_the_digest_binds_the_definition_and_the_files_it_names(tmp_path: Path) -> None:
    hook = tmp_path / "hooks" / "check.py"
    hook.parent.mkdir()
    hook.write_text("print('v1')\n")
    text = BASE + """
[configurations.hooked]
extends = "base"
[configurations.hooked.rein.hooks.h]
command = ["python3", "{suite}/hooks/check.py"]
events = ["PreToolUse"]
"""
    first = load_configurations(write(tmp_path, text))
    again = load_configurations(write(tmp_path, text))
    assert first["hooked"].digest == again["hooked"].digest
    hook.write_text("print('v2')\n")
    changed = load_configurations(write(tmp_path, text))
    assert changed["hooked"].digest != first["hooked"].digest
    assert changed["base"].digest == first["base"].digest  # it names no file
    assert builtin("oracle").digest != builtin("nop").digest


@pytest.mark.parametrize(("text", "words"), [
    ("[configurations.a]\nextends = \"b\"\n[configurations.b]\nextends = \"a\"\n",
     "extends loops"),
    ("[configurations.a]\nextends = \"missing\"\n", "does not declare"),
    ("[configurations.a.rein.store]\nurl = \"postgresql://x\"\n", "cannot be set"),
    ("[configurations.a.rein.approver]\nid = \"someone\"\n", "cannot be set"),
    ("[configurations.a.rein.hook.h]\ncommand = [\"true\"]\n",
     "configurations.a.rein.hook is not a table of rein.toml"),
    ("[configurations.a]\nmodel = \"x\"\n", "not a key rein reads"),
    ("[configurations.oracle]\n", "built in"),
    ("[other]\n", "not a section"),
])
def test_a_malformed_file_is_refused_with_the_reason(tmp_path: Path, text: str,
                                                     words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_configurations(write(tmp_path, text))
    assert caught.value.code == "EVAL005" and words in caught.value.message


def test_a_table_that_is_not_rein_tomls_is_not_called_the_evaluations(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_configurations(write(tmp_path, "[configurations.a.rein.hook.h]\n"))
    assert caught.value.message == "configurations.a.rein.hook is not a table of rein.toml"
    assert (caught.value.hint or "").startswith("did you mean 'hooks'? (a configuration "
                                                "sets any of: dev, driver, hooks,")


def test_a_configuration_named_twice_is_named(tmp_path: Path) -> None:
    configs = load_configurations(write(tmp_path, BASE))
    with pytest.raises(ConfigError) as caught:
        select(["base", "oracle", "base"], configs)
    assert (caught.value.code, caught.value.message) == ("EVAL004",
                                                        "--config base is given twice")


def test_an_unknown_name_is_refused_with_the_nearest_one(tmp_path: Path) -> None:
    configs = load_configurations(write(tmp_path, BASE))
    with pytest.raises(ConfigError) as caught:
        select(["bsae"], configs)
    assert caught.value.code == "EVAL004" and "base" in (caught.value.hint or "")
    assert [c.name for c in select(["nop", "base", "oracle"], configs)] == [
        "nop", "base", "oracle"]


def test_refusals_come_before_the_evaluation_exists(ws: Path, tmp_path: Path,
                                                    capsys: Any) -> None:
    suite = tmp_path / "suite"
    scenario = SUITE / "fix-greeting"
    suite.mkdir()
    (suite / "eval.toml").write_text("[configurations.driverless]\n"
                                     "[configurations.driverless.rein]\n"
                                     "policy = { shell = \"allow\" }\n")
    import shutil

    shutil.copytree(scenario, suite / "fix-greeting")
    code, out = run_eval(capsys, str(suite), "--config", "driverless")
    assert code == 64 and out["error"]["code"] == "EVAL006"
    code, out = run_eval(capsys, str(suite), "--config", "nope")
    assert code == 64 and out["error"]["code"] == "EVAL004"
    code, out = run_eval(capsys, str(tmp_path / "suite" / "fix-greeting" / "workspace"),
                         "--config", "oracle")
    assert code == 64 and out["error"]["code"] == "EVAL001"
    assert not (ws / ".rein").exists()


def test_a_configuration_narrows_the_persons_policy_never_widens_it(
        ws: Path, tmp_path: Path) -> None:
    """The overlay is laid under the person's rein.toml by the rules of a project file."""
    from rein.config import load_config, with_layer

    user = tmp_path / "home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[policy]\nshell = "deny"\n')
    base = load_config(ws)
    layered = with_layer(base, {"policy": {"shell": "allow", "network": "deny"}},
                         path="eval.toml#configurations.x")
    assert layered.policy["shell"] == "deny" and layered.policy["network"] == "deny"
    assert any("cannot widen" in note for note in layered.notes)


def test_a_configurations_hooks_are_dropped_where_project_hooks_are_forbidden(
        ws: Path, tmp_path: Path) -> None:
    from rein.config import load_config, with_layer

    managed = tmp_path / "etc" / "rein.toml"
    managed.parent.mkdir(parents=True)
    managed.write_text("[policy]\nproject_hooks = false\n")
    layered = with_layer(load_config(ws), {"hooks": {"h": {"command": ["true"],
                                                           "events": ["PreToolUse"]}}},
                         path="eval.toml#configurations.x")
    assert layered.hooks == {} and any("project_hooks = false" in n for n in layered.notes)


def test_prompt_text_and_a_profile_reach_every_task_and_decision_node(tmp_path: Path) -> None:
    from rein.eval.trial import with_overlays

    profile = tmp_path / "coder.agent.yaml"
    profile.write_text("kind: AgentProfile\n")
    path = write(tmp_path, BASE + """
[configurations.prompted]
extends = "base"
instructions = "Read before you write."
profile = "coder.agent.yaml"
""")
    prompted = load_configurations(path)["prompted"]
    graph = {"nodes": {"t": {"type": "task", "instructions": "Do it."},
                       "d": {"type": "decision"}, "g": {"type": "gate"}}}
    nodes = with_overlays(graph, prompted)["nodes"]
    assert nodes["t"]["instructions"] == "Do it.\n\nRead before you write."
    assert nodes["d"]["instructions"] == "Read before you write."
    assert nodes["t"]["x-rein-profile"] == nodes["d"]["x-rein-profile"] == str(profile)
    assert nodes["g"] == {"type": "gate"} and graph["nodes"]["t"]["instructions"] == "Do it."
    before = prompted.digest
    profile.write_text("kind: AgentProfile\n# changed\n")
    assert load_configurations(path)["prompted"].digest != before


def test_a_bad_provider_table_is_refused_even_with_per_scenario_files(
        ws: Path, tmp_path: Path, capsys: Any) -> None:
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(SUITE / "fix-greeting", suite / "fix-greeting")
    (suite / "eval.toml").write_text(textwrap.dedent(BASE).replace(
        'kind = "scripted"', 'kind = "scripted"\nmax_attempts = "many"'))
    code, out = run_eval(capsys, str(suite), "--config", "base")
    assert code == 64 and out["error"]["code"].startswith("PROVCFG")
    assert not (ws / ".rein").exists()


def test_names_whose_trials_would_share_a_name_are_refused(ws: Path, tmp_path: Path,
                                                          capsys: Any) -> None:
    """Scenario s1 under x__a and scenario s1__x under a are both trial s1__x__a__1: one
    folder and one journal entry for two trials (the evaluation stopped on the folder)."""
    import shutil

    suite = tmp_path / "suite"
    for name in ("s1", "s1__x"):
        shutil.copytree(SUITE / "fix-greeting", suite / name)
    (suite / "eval.toml").write_text(BASE.replace("configurations.base", "configurations.a")
                                     + BASE.replace("configurations.base",
                                                    "configurations.x__a"))
    code, out = run_eval(capsys, str(suite), "--config", "x__a", "--config", "a")
    assert (code, out["error"]["code"]) == (64, "EVAL007")
    assert out["error"]["message"] == ("scenario 's1__x' under configuration 'a' and scenario "
                                       "'s1' under 'x__a' are both trial s1__x__a__N")
    assert not (ws / ".rein").exists()
