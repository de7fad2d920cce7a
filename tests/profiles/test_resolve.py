"""Resolution: discovery and precedence, trust, extends, variables, MCP, skills, hooks, paths."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from profile_env import HOOKS_TOML, data_fixture, isolated_env_fixture, ws_fixture  # noqa: F401

from rein.config import load_config
from rein.config.trusting import trust_project
from rein.profiles.discovery import discover
from rein.profiles.records import ProfileError
from rein.profiles.resolve import resolve_profile, skill_digest

pytestmark = pytest.mark.usefixtures("isolated_env")


def put(folder: Path, source: Path, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / (name or source.name)
    shutil.copy(source, target)
    return target


def resolve(ref: str | Path, ws: Path, **kw):
    return resolve_profile(ref, workspace=ws, config=load_config(ws), **kw)


def test_project_profile_resolves_by_name_with_project_trust(ws: Path, data: Path) -> None:
    put(ws / ".agents", data / "scribe.agent.yaml")
    resolved = resolve("scribe", ws)
    assert resolved.trust == "project" and resolved.revision == 3
    assert resolved.data["metadata"]["trust"] == "project"
    assert resolved.data["spec"]["role"]["instructions"] == "You write release notes for rein.\n"


def test_trust_in_the_file_is_discarded(ws: Path, data: Path) -> None:
    text = (data / "scribe.agent.yaml").read_text().replace(
        "  revision: 3\n", "  revision: 3\n  trust: managed\n")
    (ws / ".agents").mkdir()
    (ws / ".agents" / "scribe.agent.yaml").write_text(text)
    resolved = resolve("scribe", ws)
    assert resolved.trust == "project"
    assert any(a.field == "/metadata/trust" and a.granted == "project"
               for a in resolved.adjustments)


def test_user_and_project_precedence_is_reported(ws: Path, data: Path,
                                                 isolated_env: dict[str, str]) -> None:
    put(Path(isolated_env["HOME"]) / ".agentprofiles", data / "scribe.agent.yaml")
    put(ws / ".agents", data / "scribe.agent.yaml")
    catalog = discover(ws, load_config(ws))
    assert catalog.find("scribe").root.scope == "project"
    assert any("takes precedence" in r for r in catalog.reports)


def test_a_project_profile_never_shadows_a_managed_one(ws: Path, data: Path,
                                                       isolated_env: dict[str, str]) -> None:
    managed = Path(isolated_env["REIN_MANAGED_CONFIG"]).parent / "agents"
    put(managed, data / "scribe.agent.yaml")
    put(ws / ".agents", data / "scribe.agent.yaml")
    resolved = resolve("scribe", ws)
    assert resolved.trust == "managed"
    assert any("shadow the managed profile" in w for w in resolved.warnings)


def test_same_name_twice_in_one_root_is_an_error(ws: Path, data: Path) -> None:
    put(ws / ".agents", data / "scribe.agent.yaml")
    put(ws / ".agents", data / "scribe.agent.yaml", "copy.agent.yaml")
    with pytest.raises(ProfileError) as info:
        resolve("scribe", ws)
    assert info.value.code == "OAP201" and "L1-D2" in info.value.message


def test_unknown_name_says_where_it_looked(ws: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve("nobody", ws)
    assert info.value.code == "OAP202" and ".agents" in (info.value.hint or "")


def test_extends_merges_and_verifies_the_revision_pin(ws: Path, data: Path) -> None:
    put(ws / ".agents", data / "base.agent.yaml")
    child = put(ws / ".agents", data / "child.agent.yaml")
    resolved = resolve(child, ws)
    spec = resolved.data["spec"]
    assert resolved.extends == ("base@4",)
    assert spec["tools"] == {"policy": "allowlist", "allow": ["read"]}  # arrays replace
    assert spec["permissions"] == {"default": "ask", "shell": "allow", "edit": "deny"}
    assert spec["runtime"] == {"mode": "subagent", "max_turns": 30}
    assert resolved.data["metadata"]["name"] == "child"
    assert "tags" in resolved.data["metadata"]  # other metadata deep-merges
    assert "state" not in resolved.data


def test_extends_pin_mismatch_and_cycles_are_refused(ws: Path, data: Path) -> None:
    put(ws / ".agents", data / "base.agent.yaml")
    child = ws / ".agents" / "child.agent.yaml"
    child.write_text((data / "child.agent.yaml").read_text().replace("revision: 4", "revision: 5"))
    with pytest.raises(ProfileError) as info:
        resolve(child, ws)
    assert info.value.code == "OAP212"
    base = ws / ".agents" / "base.agent.yaml"
    base.write_text(base.read_text().replace("spec:\n", "spec:\n", 1).replace(
        "kind: AgentProfile\n", "kind: AgentProfile\nextends:\n  - name: child\n"))
    child.write_text((data / "child.agent.yaml").read_text().replace("    revision: 4\n", ""))
    with pytest.raises(ProfileError) as info:
        resolve(child, ws)
    assert info.value.code == "OAP210" and "cycle" in info.value.message


def test_extends_digest_pin(ws: Path, data: Path) -> None:
    from rein.formats.oap import load_oap, spec_digest

    put(ws / ".agents", data / "base.agent.yaml")
    good = spec_digest(load_oap(data / "base.agent.yaml").data)
    child = ws / ".agents" / "child.agent.yaml"
    text = (data / "child.agent.yaml").read_text()
    child.write_text(text.replace("revision: 4\n", f"revision: 4\n    digest: {good}\n", 1))
    assert resolve(child, ws).extends == ("base@4",)
    child.write_text(text.replace("revision: 4\n", "revision: 4\n    digest: sha256:" + "0" * 64
                                  + "\n", 1))
    with pytest.raises(ProfileError) as info:
        resolve(child, ws)
    assert info.value.code == "OAP213"


def mcp_profile(ws: Path, data: Path, env_line: str) -> Path:
    text = (data / "scribe.agent.yaml").read_text().replace(
        "    deny: [shell]\n",
        "    deny: [shell]\n    mcp_servers:\n      - name: gh\n        transport: stdio\n"
        f"        command: gh-mcp\n        env:\n          {env_line}\n")
    path = ws / "scribe.agent.yaml"
    path.write_text(text)
    return path


def test_mcp_server_with_an_unset_variable_is_dropped_and_recorded(ws: Path, data: Path) -> None:
    path = mcp_profile(ws, data, "GH_TOKEN: ${GH_TOKEN}")
    resolved = resolve(path, ws, env={})
    assert resolved.dropped_mcp_servers == ("gh",) and resolved.mcp_servers == ()
    resolved = resolve(path, ws, env={"REIN_SECRET_GH_TOKEN": "s3cret"})
    assert [s["name"] for s in resolved.mcp_servers] == ["gh"]
    assert "s3cret" not in repr(resolved.data)  # values are never read into the profile


def test_mcp_literal_is_refused(ws: Path, data: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve(mcp_profile(ws, data, "GH_TOKEN: sk-live-abc123"), ws)
    assert "OAP007" in {f.code for f in info.value.findings}


def test_symlink_escape_is_rejected_at_resolve_time(ws: Path, data: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "docs")
    with pytest.raises(ProfileError) as info:
        resolve(put(ws, data / "scribe.agent.yaml"), ws)
    assert info.value.code == "OAP008" and "outside the workspace" in info.value.message


def skill_profile(ws: Path, data: Path, required: bool, digest: str | None = None) -> Path:
    pin = f"\n        digest: {digest}" if digest else ""
    text = (data / "scribe.agent.yaml").read_text().replace(
        "    deny: [shell]\n", f"    deny: [shell]\n    skills:\n      - name: notes-style\n"
        f"        required: {str(required).lower()}{pin}\n")
    path = ws / "scribe.agent.yaml"
    path.write_text(text)
    return path


def test_skills_missing_required_fails_and_optional_is_dropped(ws: Path, data: Path) -> None:
    with pytest.raises(ProfileError) as info:
        resolve(skill_profile(ws, data, True), ws)
    assert info.value.code == "OAP220"
    resolved = resolve(skill_profile(ws, data, False), ws)
    assert resolved.skills == () and "never installs" in resolved.adjustments[-1].reason
    assert not (ws / ".agents").exists()  # resolution created nothing


def test_skill_digest_is_verified(ws: Path, data: Path) -> None:
    skill = ws / ".agents" / "skills" / "notes-style"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# style\n")
    good = skill_digest(skill)
    assert len(resolve(skill_profile(ws, data, True, good), ws).skills) == 1
    with pytest.raises(ProfileError):
        resolve(skill_profile(ws, data, True, "sha256:" + "0" * 64), ws)


def test_required_hook_must_be_registered(ws: Path, data: Path) -> None:
    text = (data / "scribe.agent.yaml").read_text().replace(
        "  lifecycle:\n", "  lifecycle:\n    on_end:\n      - hook: redact-secrets\n"
        "        required: true\n")
    path = ws / "scribe.agent.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        resolve(path, ws)
    assert info.value.code == "OAP221" and "rein.toml" in (info.value.hint or "")
    (ws / "rein.toml").write_text(HOOKS_TOML)
    with pytest.raises(ProfileError) as info:  # a project's hooks run only once trusted
        resolve(path, ws)
    assert f"rein config trust --workspace {ws}" in (info.value.hint or "")
    trust_project(ws)
    (hook,) = resolve(path, ws).hooks
    assert hook.name == "redact-secrets" and hook.command[0] == "python"


@pytest.mark.shared
def test_every_shared_example_instantiates(ws: Path, shared_dir: Path) -> None:
    (ws / "rein.toml").write_text(HOOKS_TOML)
    trust_project(ws)
    folder = shared_dir / "oap-examples"
    names = sorted(p.name for p in folder.glob("*.agent.*")) + ["json/note-taker.agent.json"]
    for name in names:
        resolved = resolve(folder / name, ws, env={})
        assert resolved.name and resolved.trust == "imported"
    python = resolve(folder / "python-reviewer.agent.yaml", ws, env={})
    assert python.extends == ("base-reviewer@4",)
    assert python.data["spec"]["permissions"]["shell"] == "deny"


def test_the_record_names_revision_and_spec_digest(ws: Path, data: Path) -> None:
    from rein.formats.oap import load_oap, spec_digest

    resolved = resolve(put(ws, data / "scribe.agent.yaml"), ws)
    record = resolved.record()
    assert (record["name"], record["revision"]) == ("scribe", 3)
    assert record["spec_digest"] == spec_digest(load_oap(data / "scribe.agent.yaml").data)
    assert any(a["reason"] == "${{ vars }} substituted" for a in record["adjustments"])
    with pytest.raises(AttributeError, match="is frozen"):
        resolved.data = {}  # type: ignore[misc]  # frozen for the session
