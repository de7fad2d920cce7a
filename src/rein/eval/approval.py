"""A person's approval of the code an evaluation's configurations run.

A configuration is an overlay on the person's ``rein.toml`` declared in a suite's file, and
some of its tables run code: a hook's command, a command worker's agent CLI, the scripted
worker's answers, a provider that sends prompts to a URL. Those are the tables a project
``rein.toml`` withholds until it is trusted (:func:`rein.config.trust.split_project` tells
them apart here too), and nothing of them runs until a person approves them:

* :func:`review` lists, for every configuration of an evaluation, the tables that run or
  send something, with the suite files their commands run (the rules of
  :mod:`rein.config.command_files`, the suite's folder standing for the workspace), and binds
  them into one ``sha256:`` digest with the configurations' own digests and the digests of
  the scenarios the evaluation runs: a hook or an agent CLI runs in each trial's workspace,
  made from its scenario, and may run any of its files.
* The approval is recorded in ``approved-evaluations.json`` beside the account's own
  ``rein.toml`` (found through the password database, never through ``$HOME``), by digest:
  a later evaluation of the same content needs no new approval; a changed hook script,
  configuration or scenario does.
* A process confined the way agents' sandboxes confine (no-new-privileges) cannot approve
  (APPROVAL003, :func:`rein.engine.run.answering.check_unconfined`).
* While the trials run, each hook and command worker runs its suite files only with the
  bytes that were approved (:attr:`Review.pins`, enforced by the hook runner and the command
  worker as for a trusted project file). So it does the files it names in a scenario's folder
  (``{scenario}/...``) and those it names relative to where it runs, the trial's workspace
  (:meth:`Review.pins_for`): the agent under test writes there, and must neither plant nor
  change what a hook runs outside its sandbox (the write guard keeps it from those paths).

The built-in configurations and those that only route to offline providers (the scripted
test double) run nothing of the suite's and need no approval.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rein.config.trust import read_keyed, write_keyed
from rein.core.frozen import Frozen, field
from rein.errors import ConfigError, Refused
from rein.eval.configs import Configuration
from rein.eval.scenarios import Scenario

if TYPE_CHECKING:
    from rein.config import Config
    from rein.config.trust import Withheld

APPROVALS_FILE = "approved-evaluations.json"
SCENARIO = "{scenario}"  # stands for the folder of the scenario a trial runs
FORMAT = 1  # the version of the approvals file


class Needs(Frozen):
    """One configuration's tables that run or send something, as a person reviews them."""

    configuration: str
    digest: str  # the configuration's own digest
    items: tuple[Withheld, ...]

    def to_json(self) -> dict[str, Any]:
        return {"configuration": self.configuration, "digest": self.digest,
                "runs": [item.to_json() for item in self.items]}


class Review(Frozen):
    """What an evaluation's configurations run, and the digest a person approves."""

    digest: str | None  # None: nothing needs approval
    needs: tuple[Needs, ...] = ()
    scenarios: Mapping[str, str] = field(default_factory=dict)  # name -> digest, bound
    # "hooks.NAME" / "workers.command.NAME" of a configuration -> {absolute path: digest}
    pins: Mapping[str, Mapping[str, Mapping[str, str]]] = field(default_factory=dict)
    # configuration -> scenario -> "hooks.NAME"... -> {path: digest}: the files named in the
    # scenario's folder (absolute) and in the trial's workspace (relative to it)
    trial_pins: Mapping[str, Mapping[str, Mapping[str, Mapping[str, str]]]] = \
        field(default_factory=dict)

    def pins_for(self, configuration: str, scenario: str) -> dict[str, dict[str, str]]:
        """What each hook and command worker of ``configuration`` runs in a trial of
        ``scenario``, with the approved digests (``Config.pinned``)."""
        out = {key: dict(files) for key, files in self.pins.get(configuration, {}).items()}
        for key, files in self.trial_pins.get(configuration, {}).get(scenario, {}).items():
            out.setdefault(key, {}).update(files)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "configurations": [n.to_json() for n in self.needs],
                "scenarios": dict(self.scenarios)}

    def describe(self) -> list[str]:
        """The review as lines for a person at a terminal."""
        lines = ["These configurations run code or reach services of the suite's choosing:"]
        for need in self.needs:
            lines.append(f"  {need.configuration} ({need.digest}):")
            for item in need.items:
                lines.append(f"    {item.key} ({item.kind}): {item.detail}")
                lines += [f"      runs {path} ({_shown(path, digest)})"
                          for path, digest in item.files.items()]
        lines.append(f"  in the workspaces of {len(self.scenarios)} scenario(s), bound by "
                     "their digests")
        lines.append(f"digest: {self.digest}")
        return lines


def review(configs: Sequence[Configuration], scenarios: Sequence[Scenario],
           base: Config) -> Review:
    """What ``configs`` run over ``scenarios`` under the person's ``base`` configuration
    (EVAL023 for a command whose files cannot be told from its line)."""
    from rein.config.trust import split_project

    needs: list[Needs] = []
    pins: dict[str, dict[str, dict[str, str]]] = {}
    trial_pins: dict[str, dict[str, dict[str, dict[str, str]]]] = {}
    search_path = os.environ.get("PATH", "")
    for config in configs:
        if config.builtin or config.suite is None:
            continue
        suite = config.suite.resolve()
        # {scenario} stays as written: the files it names belong to the scenarios' digests.
        overlay = _filled(dict(config.overlay), {"{suite}": str(suite)})
        _safe, items = split_project(overlay, dict(base.data), suite, search_path=search_path)
        if not items:
            continue
        for item in items:
            if item.unsure is not None:
                raise ConfigError(
                    f"configuration {config.name!r}: {item.key} cannot be approved: "
                    f"{item.unsure}", code="EVAL023",
                    hint="rein approves the suite files a command runs, so it must tell them "
                         "from the line: write the command as a list, name suite files "
                         "through {suite}/, and list what a script sources or imports in a "
                         "hook's files")
            named = {str(suite / path): digest for path, digest in item.files.items()
                     if SCENARIO not in path}
            if named:
                pins.setdefault(config.name, {})[item.key] = named
        needs.append(Needs(configuration=config.name, digest=config.digest, items=items))
        for scenario in scenarios:
            found = _trial_pins(items, scenario, search_path)
            if found:
                trial_pins.setdefault(config.name, {})[scenario.name] = found
    if not needs:
        return Review(digest=None)
    bound = {s.name: s.digest for s in scenarios}
    body = {"configurations": {n.configuration: {"digest": n.digest,
                                                 "runs": {i.key: i.bound() for i in n.items}}
                               for n in needs},
            "scenarios": bound}
    from rein.formats.canonical import canonical_json

    digest = "sha256:" + hashlib.sha256(canonical_json(body)).hexdigest()
    return Review(digest=digest, needs=tuple(needs), scenarios=bound, pins=pins,
                  trial_pins=trial_pins)


def _trial_pins(items: Sequence[Withheld], scenario: Scenario, search_path: str
                ) -> dict[str, dict[str, str]]:
    """The files each hook and command worker of ``items`` runs in a trial of ``scenario``
    beyond the suite's: those its line names in the scenario's folder (by absolute path),
    and those it names relative to where it runs, the trial's workspace, with their digests
    in the scenario's fixture, which each trial's workspace starts as a copy of (by path
    relative to that workspace: absent ones too, so that the agent cannot create them)."""
    import tempfile

    from rein.config.trust import bound_files

    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="rein-eval-empty-") as empty:
        fixture = scenario.workspace or Path(empty)  # no fixture: an empty workspace
        for item in items:
            if item.kind not in ("hook", "command worker") or not isinstance(item.value,
                                                                             Mapping):
                continue
            # Its files list names suite files, bound with the suite already.
            spec = {k: v for k, v in item.value.items() if k != "files"}
            found: dict[str, str] = {}
            if SCENARIO in str(spec):
                spec = _filled(spec, {SCENARIO: str(scenario.path)})
                named = bound_files(spec, item.kind, scenario.path, search_path)
                found.update({str(scenario.path / path): digest
                              for path, digest in (named.get("files") or {}).items()})
            found.update(bound_files(spec, item.kind, fixture, search_path).get("files") or {})
            if found:
                out[item.key] = found
    return out


def _shown(path: str, digest: str) -> str:
    """A bound file's digest as a person reviews it."""
    if SCENARIO in path:
        return "each scenario's, bound with the scenario"
    return digest


Ask = Callable[[Review], bool]


def require(found: Review, base: Config, *, given: str | None, ask: Ask | None = None,
            now: dt.datetime | None = None) -> dict[str, Any] | None:
    """The approval of ``found``, recorded before or given now; what the plan keeps of it
    (None when nothing needs approval). ``given``: the digest ``--approve`` names; ``ask``:
    asks the person at a terminal. EVAL021 when nobody approved, EVAL022 when ``given`` is
    not what the configurations run now, APPROVAL003 for an approval from a confined
    process."""
    if found.digest is None:
        if given is not None:
            raise Refused(f"--approve {given}: these configurations run nothing that needs "
                          "approval", code="EVAL022",
                          hint="leave out --approve, or name the configurations that run code")
        return None
    path = approvals_file()
    records = read_approvals(path)
    if given is None and found.digest in records:
        return {"digest": found.digest, "recorded": True, **records[found.digest]}
    if given is not None and given != found.digest:
        raise Refused(f"--approve {given} is not what these configurations run now: their "
                      f"digest is {found.digest}", code="EVAL022", digest=found.digest,
                      hint="review them again (a hook script, a configuration or a scenario "
                           f"changed), then pass --approve {found.digest}")
    if given is None and (ask is None or not ask(found)):
        raise Refused(_unapproved(found), code="EVAL021", digest=found.digest,
                      hint=f"review them, then pass --approve {found.digest} (recorded: the "
                           "same content needs no approval again)")
    record = _record(base, found, now)
    records[found.digest] = record
    write_approvals(path, records)
    return {"digest": found.digest, "recorded": False, **record}


def _unapproved(found: Review) -> str:
    runs = "; ".join(f"{n.configuration}: " + ", ".join(f"{i.key} ({i.detail})"
                                                         for i in n.items)
                     for n in found.needs)
    return f"the configurations run code nobody approved: {runs}"


def _record(base: Config, found: Review, now: dt.datetime | None) -> dict[str, Any]:
    """The approval as it is recorded: who, when and how (APPROVAL003 when this process is
    confined: an approval is a person's to give)."""
    from rein.engine.run.answering import Via, check_unconfined, given

    approver = base.approver
    state = check_unconfined(approver, f"the approval of {_names(found)}")
    moment = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    return {"approved_at": moment.isoformat().replace("+00:00", "Z"),
            "approver": approver.id, "configurations": [n.configuration for n in found.needs],
            "given": given(approver=approver, via=Via(surface="cli"), state=state)}


def _names(found: Review) -> str:
    return "configuration(s) " + ", ".join(n.configuration for n in found.needs)


def check_unchanged(found: Review, approved: Mapping[str, Any] | None, evaluation: str) -> None:
    """On resume, on a worker: what runs now is what was approved when the evaluation began
    (EVAL010 otherwise)."""
    recorded = approved.get("digest") if approved else None
    if found.digest != recorded:
        raise ConfigError(f"what the configurations of evaluation {evaluation} run changed "
                          f"since it was approved ({recorded} then, {found.digest} now)",
                          code="EVAL010", hint="restore the files, or start a new evaluation")


# -- the approvals file ----------------------------------------------------------------------


def approvals_file() -> Path:
    """Beside the account's own user ``rein.toml``: the password database's home, so no
    ``$HOME`` or ``REIN_USER_CONFIG`` of the process can point it at a file it wrote."""
    from rein.config.files import authority_paths, config_paths

    user = dict(authority_paths()).get("user") or config_paths(Path.cwd())[1][1]
    return user.parent / APPROVALS_FILE


def read_approvals(path: Path) -> dict[str, dict[str, Any]]:
    """Digest -> record; a missing file is empty, a damaged one an error (EVAL024), never
    silently empty nor silently approved."""
    return read_keyed(path, "approvals", FORMAT, lambda why: _damaged(path, why))


def write_approvals(path: Path, records: Mapping[str, Mapping[str, Any]]) -> None:
    """Replace the file atomically (temp file, fsync, rename), readable by its owner only."""
    write_keyed(path, "approvals", FORMAT, records, prefix=".approved-")


def _damaged(path: Path, why: str) -> ConfigError:
    return ConfigError(f"{path}: the evaluations' approvals file is damaged: {why}",
                       code="EVAL024", hint="delete it and approve the configurations again "
                                            "with rein eval ... --approve DIGEST")


def _filled(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace(name, text)
        return value
    if isinstance(value, list):
        return [_filled(v, names) for v in value]
    if isinstance(value, Mapping):
        return {k: _filled(v, names) for k, v in value.items()}
    return value


__all__ = ["APPROVALS_FILE", "Needs", "Review", "approvals_file", "check_unchanged",
           "read_approvals", "require", "review", "write_approvals"]
