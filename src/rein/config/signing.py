"""Signed approvals: an answer signed with its person's SSH key, as git signs commits.

``ssh-keygen -Y sign`` signs the answer's message under the namespace ``rein-approval``
(so a signature made for anything else never counts); ``ssh-keygen -Y verify`` checks it
against the allowed-signers file ``[approver] allowed_signers`` names, for the principal
``[approver] id``, before anything is recorded. The key's passphrase, or the touch a FIDO
key (``ed25519-sk``) asks for, is what an agent cannot give: ssh-keygen reads the
passphrase from the terminal, never from rein. An answer signed for one approval, digest or
decision does not verify for another: the message names them all.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from rein.core.frozen import Frozen
from rein.errors import Refused

NAMESPACE = "rein-approval"
CODE = "APPROVAL004"
_GOOD = re.compile(r'^Good "[^"]*" signature for (?P<who>.+) with (?P<type>\S+) key '
                   r"(?P<fingerprint>\S+)", re.MULTILINE)
_MAX_SIGNATURE = 16 * 1024  # an armored SSH signature is well under 2 KB


class Verified(Frozen):
    """A signature that verified: who signed, with which key."""

    principal: str
    fingerprint: str  # SHA256:... of the public key
    key_type: str  # ED25519, ED25519-SK, ECDSA-SK, RSA...


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise Refused("signed approvals need ssh-keygen (OpenSSH 8.2 or later), which is not "
                      "installed here; nothing was recorded", code=CODE,
                      hint="install OpenSSH's client tools")
    return found


def sign(key: str, message: bytes, what: str = "the answer") -> str:
    """The armored signature of ``message`` by ``key`` (a private key file, or a public one
    whose private half ssh-agent holds). ssh-keygen asks on the terminal for what the key
    needs (a passphrase, a touch); without one it fails and nothing is signed. ``what``: what
    is signed, for the refusal ("the answer", "the approval of run run-…")."""
    try:
        done = subprocess.run([_ssh_keygen(), "-Y", "sign", "-f", key, "-n", NAMESPACE],
                              input=message, capture_output=True, check=False)
    except OSError as exc:
        raise Refused(f"{what} could not be signed with {key}: {exc}; nothing was "
                      "recorded", code=CODE, hint="check the signing key's path") from exc
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    if done.returncode != 0 or b"BEGIN SSH SIGNATURE" not in done.stdout:
        why = said[-1] if said else f"ssh-keygen exited {done.returncode}"
        raise Refused(f"{what} could not be signed with {key}: {why}; nothing was "
                      "recorded", code=CODE,
                      hint="the key's owner signs from their own terminal, where ssh-keygen "
                           "can ask for the passphrase or the key's touch")
    return done.stdout.decode("ascii", "replace")


class Unverified(Exception):
    """A signature that does not verify, and why (in words)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def check(allowed_signers: str, principal: str, message: bytes, signature: str, *,
          workspace: Path | None = None) -> Verified:
    """``signature`` checked against ``allowed_signers`` for ``principal``: who signed with
    which key; :class:`Unverified` (with why) when it does not verify. ``workspace``: an
    allowed-signers file inside it verifies nothing (node work and an agent's sandbox write
    there, and could add a key of their own)."""
    if workspace is not None and in_workspace(allowed_signers, workspace):
        raise Unverified(f"the allowed-signers file {allowed_signers} lies in the workspace, "
                         "where node work and agents write: no signature is checked against "
                         "it")
    if len(signature) > _MAX_SIGNATURE or "BEGIN SSH SIGNATURE" not in signature:
        raise Unverified("what was given is not an SSH signature")
    if not Path(allowed_signers).is_file():
        raise Unverified(f"the allowed-signers file {allowed_signers} cannot be read")
    with tempfile.TemporaryDirectory(prefix="rein-sig-") as folder:
        sig = Path(folder) / "answer.sig"
        sig.write_text(signature, encoding="ascii", errors="replace")
        try:
            done = subprocess.run(
                [_ssh_keygen(), "-Y", "verify", "-f", allowed_signers, "-I", principal,
                 "-n", NAMESPACE, "-s", str(sig)], input=message, capture_output=True,
                check=False, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unverified(f"ssh-keygen could not check it ({exc})") from exc
    said = done.stdout.decode("utf-8", "replace")
    good = _GOOD.search(said)
    if done.returncode != 0 or good is None:
        last = [line for line in done.stderr.decode("utf-8", "replace").strip().splitlines()
                if line.strip()]
        raise Unverified(f"it is not a signature of this very content by a key the allowed "
                         f"signers give {principal} ({last[-1] if last else 'it does not verify'})")
    return Verified(principal=good["who"].strip(), fingerprint=good["fingerprint"],
                    key_type=good["type"])


def in_workspace(path: str, workspace: Path) -> bool:
    """Whether ``path`` (resolved) lies inside ``workspace``."""
    try:
        real, root = Path(path).resolve(), Path(workspace).resolve()
    except (OSError, RuntimeError):
        return True  # a path that cannot be resolved is not trusted either
    return real == root or root in real.parents


def verify(allowed_signers: str, principal: str, message: bytes, signature: str, *,
           workspace: Path | None = None) -> Verified:
    """``signature`` checked against ``allowed_signers`` for ``principal``; APPROVAL004
    (nothing recorded) when it does not verify (``workspace``: see :func:`check`)."""
    try:
        return check(allowed_signers, principal, message, signature, workspace=workspace)
    except Unverified as exc:
        raise Refused(f"the answer's signature was refused: {exc.why}; nothing was recorded",
                      code=CODE, hint="the approver signs this very answer with their own "
                                      "key") from None


__all__ = ["NAMESPACE", "Unverified", "Verified", "check", "in_workspace", "sign", "verify"]
