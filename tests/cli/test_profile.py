"""``rein profile`` and its acceptance scenarios, through ``main(argv)``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rein.cli import main
from rein.config.trusting import trust_project

DATA = Path(__file__).resolve().parents[1] / "profiles" / "data"
HOOKS = '[hooks.redact-secrets]\ncommand = ["true"]\n'


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("REIN_MANAGED_CONFIG", str(tmp_path / "etc" / "rein.toml"))
    monkeypatch.setenv("USER", "tester")  # names nobody: the approver is the OS account


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_validate_json_shape_and_exit_codes(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    code, out, _ = run(capsys, "profile", "validate", "--json", str(DATA))
    assert code == 0
    docs = json.loads(out)["documents"]
    assert {d["kind"] for d in docs} == {"AgentProfile", "AgentStateDelta"}
    assert set(docs[0]) == {"path", "kind", "digest", "spec_digest", "findings"}
    bad = tmp_path / "bad.agent.yaml"
    bad.write_text('oap: "2.0"\nkind: AgentProfile\n')
    code, out, _ = run(capsys, "profile", "validate", str(bad))
    assert code == 1 and "[L1-P3]" in out
    code, _, _ = run(capsys, "profile", "validate", "--strict", str(DATA / "scribe.delta.yaml"))
    assert code == 2  # the delta under-declares a proposal's risk (a warning)


def test_digest_prints_the_digest_alone(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "profile", "digest", str(DATA / "notes.agent.json"))
    assert code == 0 and out.startswith("sha256:") and len(out.strip()) == 71
    _, md, _ = run(capsys, "profile", "digest", str(DATA / "notes.agent.md"))
    assert md == out


def test_effective_and_prompt(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "rein.toml").write_text('[policy]\nedit = "ask"\n')
    shutil.copy(DATA / "scribe.agent.yaml", tmp_path)
    code, out, _ = run(capsys, "profile", "effective", "--json", "--workspace", str(tmp_path),
                       str(tmp_path / "scribe.agent.yaml"))
    eff = json.loads(out)
    assert code == 0 and eff["permissions"]["edit"] == "ask"
    assert {"field": "/spec/permissions/edit", "requested": "allow", "granted": "ask",
            "reason": "narrowed by rein's policy"} in eff["adjustments"]
    code, out, _ = run(capsys, "profile", "prompt", "--workspace", str(tmp_path),
                       str(tmp_path / "scribe.agent.yaml"))
    assert code == 0 and out.index("<agent-state") < out.index("## rein's rules")


def test_a_missing_hook_fails_to_instantiate(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    text = (DATA / "scribe.agent.yaml").read_text().replace(
        "  lifecycle:\n", "  lifecycle:\n    on_start:\n      - hook: redact-secrets\n"
        "        required: true\n")
    (tmp_path / "s.agent.yaml").write_text(text)
    code, _, err = run(capsys, "profile", "effective", "--workspace", str(tmp_path),
                       str(tmp_path / "s.agent.yaml"))
    assert code == 1 and "OAP221" in err and "rein.toml" in err


def test_stale_delta_exits_4_and_propose_without_approval_exits_3(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    profile = Path(shutil.copy(DATA / "notes.agent.md", tmp_path))
    delta = str(DATA / "notes.delta.yaml")
    ws = ("--workspace", str(tmp_path))
    assert run(capsys, "profile", "apply", *ws, str(profile), delta)[0] == 3
    code, out, err = run(capsys, "profile", "apply", *ws, "--dry-run", "--approve",
                         str(profile), delta)
    assert code == 0 and out.startswith("---\n") and "would write revision 2" in err
    assert run(capsys, "profile", "apply", *ws, "--approve", str(profile), delta)[0] == 0
    code, _, err = run(capsys, "profile", "apply", *ws, "--approve", str(profile), delta)
    assert code == 4 and "revision 1" in err and "revision 2" in err


@pytest.mark.shared
@pytest.mark.parametrize("profile_name,delta_name,revision", [
    ("code-reviewer.agent.yaml", "learned-conventions.delta.yaml", 8),
    ("research-analyst.agent.md", "closes-thread.delta.yaml", 3),
])
def test_acceptance_apply_shared_deltas(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        shared_dir: Path, profile_name: str, delta_name: str,
                                        revision: int) -> None:
    examples = shared_dir / "oap-examples"
    profile = Path(shutil.copy(examples / profile_name, tmp_path))
    (tmp_path / "rein.toml").write_text(HOOKS)
    trust_project(tmp_path)
    ws = ("--workspace", str(tmp_path))
    _, before, _ = run(capsys, "profile", "digest", "--json", str(profile))
    before_digests = json.loads(before)
    code, out, _ = run(capsys, "profile", "apply", *ws, "--approve", "--json", str(profile),
                       str(examples / delta_name))
    outcome = json.loads(out)
    assert code == 0 and outcome["revision"] == revision
    assert outcome["spec_digest"] == before_digests["spec_digest"]
    assert outcome["digest"] != before_digests["digest"]
    oracle = subprocess.run([sys.executable, "-m", "oap.validate", str(profile)],
                            capture_output=True, text=True, check=False)
    assert oracle.returncode == 0, oracle.stdout
    if profile_name.endswith(".md"):
        assert profile.read_text().startswith("---\n")
    _, hist, _ = run(capsys, "profile", "history", "--json", str(profile))
    last = json.loads(hist)["history"][-1]
    from rein.config.approver import os_account

    assert last["revision"] == revision and last["approved_by"] == os_account()
    _, listed, _ = run(capsys, "profile", "proposals", "list", "--json", *ws)
    pending = json.loads(listed)["proposals"]
    if delta_name.startswith("learned"):
        (item,) = pending
        assert item["risk"] == "high" and item["path"] == "/spec/tools/allow"
        assert "shell" in item["value"]
        _, eff, _ = run(capsys, "profile", "effective", "--json", *ws, str(profile))
        assert "shell" not in json.loads(eff)["tools"]["granted"]
    else:
        assert pending == []


def test_proposals_accept_and_decline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    profile = Path(shutil.copy(DATA / "scribe.agent.yaml", tmp_path))
    ws = ("--workspace", str(tmp_path))
    assert run(capsys, "profile", "apply", *ws, str(profile), str(DATA / "scribe.delta.yaml"))[0] \
        == 0
    _, out, _ = run(capsys, "profile", "proposals", "list", *ws)
    item_id = out.split()[0]
    assert "[high]" in out
    code, _, err = run(capsys, "profile", "proposals", "accept", *ws, item_id, "--actor",
                       "tester")
    assert code == 4 and "APPROVAL_ACTOR" in err  # a typed name is checked, not believed
    code, out, _ = run(capsys, "profile", "proposals", "accept", *ws, item_id)
    assert code == 0 and "revision 5" in out
    # A decided item is refused (4) whichever answer comes second; an unknown id is usage.
    for verb in ("decline", "accept"):
        code, _, err = run(capsys, "profile", "proposals", verb, *ws, item_id)
        assert code == 4 and "OAP263" in err and "already accepted" in err, verb
        assert "hint: see rein profile proposals list --all" in err
    for verb in ("decline", "accept"):
        code, _, err = run(capsys, "profile", "proposals", verb, *ws, "p-nope")
        assert code == 64 and "OAP262" in err and "hint: see rein profile proposals list" in err


def test_history_of_a_profile_never_written_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "profile", "history", str(DATA / "base.agent.yaml"))
    assert code == 0
    assert out.endswith(": no history yet (no delta or proposal has been applied)\n")
    code, out, _ = run(capsys, "profile", "history", str(DATA / "scribe.agent.yaml"))
    assert code == 0 and out.startswith("r3  ") and "no history" not in out


def test_the_policy_writeback_holds_profile_apply(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    user = tmp_path / "home" / ".config" / "rein" / "rein.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[policy]\nwriteback = "propose"\n')
    profile = Path(shutil.copy(DATA / "scribe.agent.yaml", tmp_path))  # writeback: auto
    before = profile.read_bytes()
    ws = ("--workspace", str(tmp_path))
    code, _, err = run(capsys, "profile", "apply", *ws, str(profile),
                       str(DATA / "scribe.delta.yaml"))
    assert code == 3 and "waits for approval" in err
    assert profile.read_bytes() == before
    _, out, _ = run(capsys, "profile", "proposals", "list", *ws)
    operations = next(w for w in out.split() if w.startswith("d-"))  # the held delta
    user.write_text('[policy]\nwriteback = "off"\n')
    code, _, err = run(capsys, "profile", "proposals", "accept", *ws, operations)
    assert code == 4 and "OAP244" in err
    assert profile.read_bytes() == before


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is missing")
def test_where_approvals_are_signed_a_profile_change_is_signed_and_checked_first(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The queue file lies in the workspace: an item whose value the agent changed there
    (its id kept) is refused (OAP266) and writes nothing; an accept is signed by the
    approver's key before anything is written (APPROVAL004 without one), and the signature
    is kept with the decision, verified by ssh-keygen itself."""
    from support import account_files

    profile = Path(shutil.copy(DATA / "scribe.agent.yaml", tmp_path))
    ws = ("--workspace", str(tmp_path))
    assert run(capsys, "profile", "apply", *ws, str(profile), str(DATA / "scribe.delta.yaml"))[0] \
        == 0
    queue = tmp_path / ".rein" / "profiles" / "proposals.json"
    [item] = json.loads(queue.read_text())["items"]
    account = tmp_path_factory.mktemp("account")  # outside the workspace
    key = account / "ana"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)],
                   check=True, capture_output=True)
    allowed = account / "allowed_signers"
    allowed.write_text(f"ana {Path(f'{key}.pub').read_text().strip()}\n")
    _managed, user = account_files(monkeypatch, account)
    user.parent.mkdir(parents=True)
    user.write_text(f'[approver]\nid = "ana"\nallowed_signers = "{allowed}"\n')
    before = profile.read_bytes()
    code, _, err = run(capsys, "profile", "proposals", "accept", *ws, item["id"])
    assert code == 4 and "APPROVAL004" in err and profile.read_bytes() == before
    original = queue.read_text()
    data = json.loads(original)
    data["items"][0]["value"] = ["shell", "file_write", "fetch"]
    queue.write_text(json.dumps(data))
    user.write_text(user.read_text() + f'signing_key = "{key}"\n')
    code, _, err = run(capsys, "profile", "proposals", "accept", *ws, item["id"])
    assert code == 4 and "OAP266" in err and profile.read_bytes() == before
    queue.write_text(original)
    code, out, _ = run(capsys, "profile", "proposals", "accept", *ws, item["id"])
    assert code == 0 and "revision 5" in out
    [decided] = json.loads(queue.read_text())["items"]
    signature = decided["signature"]
    assert (decided["status"], signature["principal"]) == ("accepted", "ana")
    from rein.profiles.proposals import content_of, decision_message

    sig = account / "decision.sig"
    sig.write_text(signature["signature"])
    check = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "ana",
                            "-n", "rein-approval", "-s", str(sig)],
                           input=decision_message(item["id"], content_of(item), "accepted"),
                           capture_output=True, check=False)
    assert check.returncode == 0, check.stderr
