"""Signed approvals: with ``[approver] allowed_signers`` in the account's own rein.toml, an
accept or a decline carries the approver's SSH signature (``ssh-keygen -Y sign``, namespace
``rein-approval``), checked against that file before anything is recorded. Real keys and the
real ssh-keygen throughout; its own ``-Y verify`` is the oracle for what was recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import account_files

from rein.core.states import ApprovalStatus
from tests.cli.approvals_env import gated_waiting, nothing_recorded
from tests.scenarios.harness import Scenario

SSH_KEYGEN = shutil.which("ssh-keygen")
pytestmark = pytest.mark.skipif(SSH_KEYGEN is None, reason="ssh-keygen (OpenSSH) is missing")


@pytest.fixture
def waiting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
            ) -> tuple[Scenario, str]:
    """A run waiting at its gate, started (and so signed) by ana, whose key is
    :func:`ana_key`; each test then sets up the account as it needs."""
    key = keypair(tmp_path / "keys", "ana")
    signed_account(monkeypatch, tmp_path, key=key, signer=key)
    return gated_waiting(tmp_path, monkeypatch, capsys)


def ana_key(tmp_path: Path) -> Path:
    """The key the allowed signers give ana, which signed the run's approval."""
    return tmp_path / "keys" / "ana"


def keypair(folder: Path, name: str, passphrase: str = "") -> Path:
    assert SSH_KEYGEN is not None
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", passphrase, "-C", name, "-f",
                    str(key)], check=True, capture_output=True)
    return key


def fingerprint(key: Path) -> str:
    assert SSH_KEYGEN is not None
    out = subprocess.run([SSH_KEYGEN, "-l", "-f", f"{key}.pub"], check=True,
                         capture_output=True, text=True).stdout
    return out.split()[1]


def signed_account(monkeypatch: pytest.MonkeyPatch, folder: Path, *, key: Path | None,
                   signer: Path) -> tuple[Path, Path]:
    """Answers here signed: ana's key (``signer``) is the allowed signer; ``key`` is the one
    ``rein approvals`` signs with (None: no signing key set). (managed, user) stand-ins."""
    allowed = folder / "allowed_signers"
    allowed.write_text(f"ana {Path(f'{signer}.pub').read_text().strip()}\n")
    managed, user = account_files(monkeypatch, folder / "files")
    user.parent.mkdir(parents=True, exist_ok=True)
    lines = ['[approver]', 'id = "ana"', f'allowed_signers = "{allowed}"']
    if key is not None:
        lines.append(f'signing_key = "{key}"')
    user.write_text("\n".join(lines) + "\n")
    return managed, user


def refusal(scenario: Scenario, *args: str) -> dict[str, Any]:
    code, out = scenario.rein(*args, "--json")
    assert code == 4, out
    return dict(json.loads(out)["error"])


def test_a_signed_accept_is_recorded_with_the_key_and_verifies(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    scenario, approval_id = waiting
    key = ana_key(tmp_path)
    code, out = scenario.rein("approvals", "accept", approval_id, "--note", "read it",
                              "--no-continue", "--json")
    assert code == 0, out
    shown = json.loads(scenario.rein("approvals", "show", approval_id, "--json")[1])
    answer = shown["answer"]
    identity = answer["given"]["identity"]
    assert identity["method"] == "ssh-signature" and identity["principal"] == "ana"
    assert identity["fingerprint"] == fingerprint(key)
    # ssh-keygen itself verifies what was recorded, over the message of this very answer.
    from rein.engine.run.answering import message
    from rein.engine.service import Harness

    with Harness.open(scenario.root) as harness:
        row = harness.approval(approval_id)
        signed = message(row, ApprovalStatus.ACCEPTED, note="read it", values={})
    sig = tmp_path / "recorded.sig"
    sig.write_text(answer["signature"])
    assert SSH_KEYGEN is not None
    check = subprocess.run([SSH_KEYGEN, "-Y", "verify", "-f", str(tmp_path / "allowed_signers"),
                            "-I", "ana", "-n", "rein-approval", "-s", str(sig)], input=signed,
                           capture_output=True, check=False)
    assert check.returncode == 0, check.stderr


def test_without_a_signing_key_nothing_is_recorded(waiting: tuple[Scenario, str],
                                                   tmp_path: Path) -> None:
    scenario, approval_id = waiting
    signed_account(scenario.monkeypatch, tmp_path, key=None, signer=ana_key(tmp_path))
    for verb in ("accept", "decline"):
        assert refusal(scenario, "approvals", verb, approval_id)["code"] == "APPROVAL004"
    nothing_recorded(scenario, approval_id)


def test_a_key_the_allowed_signers_do_not_give_ana_is_refused(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """The agent signs with a key of its own: it is not ana's."""
    scenario, approval_id = waiting
    signed_account(scenario.monkeypatch, tmp_path, key=keypair(tmp_path, "agent"),
                   signer=ana_key(tmp_path))
    error = refusal(scenario, "approvals", "accept", approval_id)
    assert error["code"] == "APPROVAL004" and "nothing was recorded" in error["message"]
    nothing_recorded(scenario, approval_id)


def test_a_signature_of_another_answer_does_not_verify(waiting: tuple[Scenario, str],
                                                       tmp_path: Path) -> None:
    """Ana's real signature of an accept, handed in with a decline (or another approval):
    refused, since the message names the approval, its digest and the decision."""
    from rein.config.signing import sign
    from rein.engine.service import Harness
    from rein.errors import Refused

    scenario, approval_id = waiting
    key = ana_key(tmp_path)
    with Harness.open(scenario.root, surface="cli") as harness:
        message = harness.signing_message(approval_id, ApprovalStatus.ACCEPTED)
        assert message is not None
        signature = sign(str(key), message)
        with pytest.raises(Refused) as caught:
            asyncio_run(harness.answer(approval_id, ApprovalStatus.DECLINED, go_on=False,
                                       signature=signature))
        assert caught.value.code == "APPROVAL004"
        asyncio_run(harness.answer(approval_id, ApprovalStatus.ACCEPTED, go_on=False,
                                   signature=signature))  # the answer it was made for
    assert scenario.pending() == []


def asyncio_run(awaitable: Any) -> Any:
    import asyncio

    return asyncio.run(awaitable)


def test_a_cancel_needs_no_signature(waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """Stopping the run runs nothing, as `rein runs cancel` does unsigned."""
    scenario, approval_id = waiting
    signed_account(scenario.monkeypatch, tmp_path, key=None, signer=ana_key(tmp_path))
    code, out = scenario.rein("approvals", "cancel", approval_id, "--no-continue", "--json")
    assert code == 0 and json.loads(out)["status"] == "cancelled", out


def test_a_passphrase_no_one_types_signs_nothing(waiting: tuple[Scenario, str],
                                                 tmp_path: Path) -> None:
    """The key has a passphrase; the answering process has no terminal (an agent's shell):
    ssh-keygen cannot ask, nothing is signed and nothing recorded. The process reads the
    account's files through the same stand-in as the tests in this process."""
    scenario, approval_id = waiting
    key = keypair(tmp_path, "ana", passphrase="correct horse battery staple")
    managed, user = signed_account(scenario.monkeypatch, tmp_path, key=key,
                                   signer=ana_key(tmp_path))
    stand_in = ("import sys; from pathlib import Path; import rein.config.files as f; "
                f"f.authority_paths = lambda: [('managed', Path({str(managed)!r})), "
                f"('user', Path({str(user)!r}))]; from rein.cli import run; sys.exit(run())")
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_ASKPASS",
                                                             "DISPLAY")}
    done = subprocess.run([sys.executable, "-c", stand_in, "approvals", "accept", approval_id,
                           "--json"], cwd=scenario.root, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300, check=False,
                          start_new_session=True)
    assert done.returncode == 4, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"]["code"] == "APPROVAL004"
    nothing_recorded(scenario, approval_id)


def test_a_recorded_answer_verifies_and_an_edited_one_does_not(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """An unconfined agent of the same account can write the store: `rein approvals verify`
    rebuilds the signed message from the answer as stored, so its edit shows."""
    import sqlite3

    scenario, approval_id = waiting
    key = ana_key(tmp_path)
    code, out = scenario.rein("approvals", "decline", approval_id, "--note", "not yet",
                              "--no-continue", "--json")
    assert code == 0, out
    code, out = scenario.rein("approvals", "verify", approval_id, "--json")
    assert code == 0, out
    assert json.loads(out) == {"approval_id": approval_id, "status": "declined",
                               "principal": "ana", "fingerprint": fingerprint(key),
                               "key": "ED25519"}
    with sqlite3.connect(scenario.root / ".rein" / "rein.db") as db:
        db.execute("UPDATE approvals SET status = 'accepted' WHERE approval_id = ?",
                   (approval_id,))
    error = refusal(scenario, "approvals", "verify", approval_id)
    assert error["code"] == "APPROVAL004"


def test_a_run_started_unsigned_continues_once_a_person_signs_it_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """A run started before answers were signed here carries no signature: it is refused
    (APPROVAL005) until a person's `rein resume --force` signs its approval as the files are
    now; a forced resume without a key to sign with records nothing."""
    import sqlite3

    scenario, approval_id = gated_waiting(tmp_path, monkeypatch, capsys)
    run_id = scenario.last_run()
    key = keypair(tmp_path / "keys", "ana")
    signed_account(monkeypatch, tmp_path, key=None, signer=key)
    error = refusal(scenario, "resume", run_id)
    assert error["code"] == "APPROVAL005" and "no person's signature" in error["message"]
    assert f"rein resume {run_id} --force" in error["hint"]
    assert refusal(scenario, "resume", run_id, "--force")["code"] == "APPROVAL004"
    signed_account(monkeypatch, tmp_path, key=key, signer=key)
    error = refusal(scenario, "approvals", "accept", approval_id)
    assert error["code"] == "APPROVAL005" and "was not recorded" in error["message"]
    code, out = scenario.rein("resume", run_id, "--force", "--json")
    assert code == 3, out
    with sqlite3.connect(scenario.root / ".rein" / "rein.db") as db:
        binding = json.loads(db.execute("SELECT binding FROM runs WHERE run_id = ?",
                                        (run_id,)).fetchone()[0])
    assert (binding["x-rein-signature"]["run_id"],
            binding["x-rein-signature"]["principal"]) == (run_id, "ana")
    assert binding["x-rein-signature"]["fingerprint"] == fingerprint(key)
    code, out = scenario.rein("approvals", "accept", approval_id, "--json")
    assert code == 0, out


def test_a_surface_that_cannot_sign_starts_no_run(waiting: tuple[Scenario, str],
                                                  tmp_path: Path) -> None:
    """The web console, the app-server and ACP have no key to sign a run's approval with:
    where approvals are signed they start nothing (APPROVAL004), and nothing is written."""
    from rein.engine.service import Harness
    from rein.errors import Refused

    scenario, _approval_id = waiting
    runs = json.loads(scenario.rein("runs", "list", "--json")[1])["runs"]
    for surface in ("web", "app-server", "acp", "api"):
        with Harness.open(scenario.root, surface=surface) as harness:
            prepared = asyncio_run(harness.prepare(scenario.root / "g.agraph.yaml", given={}))
            with pytest.raises(Refused) as caught:
                asyncio_run(harness.start(prepared, approved=prepared.digest))
        assert caught.value.code == "APPROVAL004"
        assert f"the {surface} surface cannot sign" in caught.value.message
    assert json.loads(scenario.rein("runs", "list", "--json")[1])["runs"] == runs


def test_an_allowed_signers_file_in_the_workspace_verifies_nothing(
        waiting: tuple[Scenario, str], tmp_path: Path) -> None:
    """Node work and an agent's sandbox write the workspace, so an allowed-signers file
    there could hold the agent's own key: nothing is checked against it, neither an answer
    nor a run's approval."""
    scenario, approval_id = waiting
    agent = keypair(tmp_path / "agent-keys", "agent")
    inside = scenario.root / ".rein" / "allowed_signers"
    inside.write_text(f"ana {Path(f'{agent}.pub').read_text().strip()}\n")
    _managed, user = account_files(scenario.monkeypatch, tmp_path / "files")
    user.write_text(f'[approver]\nid = "ana"\nallowed_signers = "{inside}"\n'
                    f'signing_key = "{agent}"\n')
    error = refusal(scenario, "approvals", "accept", approval_id, "--no-continue")
    assert error["code"] == "APPROVAL004" and "lies in the workspace" in error["message"]
    nothing_recorded(scenario, approval_id)
    error = refusal(scenario, "resume", scenario.last_run())
    assert error["code"] == "APPROVAL005" and "lies in the workspace" in error["message"]
