"""The development flow's checkers: rein, not the agent, decides a plan, a verify, a handoff.

Registered under the ``rein.checkers`` entry-point group (``rein.dev.plan``,
``rein.dev.verify``, ``rein.dev.handoff``), so the engine calls them as ``external``
criteria of the flow's graphs, inside the run's lock, after every ``rein submit``. A
failure's evidence is the feedback of the next attempt, so it names the specific reason.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shlex
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rein.dev import git as g
from rein.dev import locks
from rein.dev.commands import run_command
from rein.dev.earlier import already_committed
from rein.dev.graphs import feature_graph, settings_from, write_feature_graph
from rein.dev.plan_check import check_plan
from rein.engine.run.criteria.model import CheckRequest, CheckResult, HarnessFault

MAX_PLAN_BYTES = 1_000_000
# The tree each feature's verify passed on, by (workspace, plan, feature): the handoff that
# follows it in the same evaluation commits that tree only, for that attempt. Held in this
# process, not in a file of the workspace, which the agent may write while rein works (a
# process it left behind could put there the tree of code whose verify never passed).
_VERIFIED: dict[tuple[str, str, str], tuple[int, str]] = {}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


async def plan(request: CheckRequest) -> CheckResult:
    """The plan the driver wrote is valid: then the feature graph is written from it (the
    features committed under an earlier plan, unchanged and verified again, left out)."""
    root = request.workspace
    name = str(request.outputs.get("plan") or "")
    path = (root / name).resolve()
    if not name or root.resolve() not in path.parents or not path.is_file():
        return CheckResult(passed=False, evidence=f"no plan file at {name!r}: write the plan "
                           "to .rein/dev/plan.json and name it in the output 'plan'")
    data = path.read_bytes()[:MAX_PLAN_BYTES + 1]
    if len(data) > MAX_PLAN_BYTES:
        return CheckResult(passed=False, evidence=f"{name} is over {MAX_PLAN_BYTES} bytes")
    try:
        parsed = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return CheckResult(passed=False, evidence=f"{name} is not valid JSON: {exc}")
    params = request.params
    settings = settings_from(params["settings"])
    checked = check_plan(parsed, max_features=settings.max_features)
    if checked.problems:
        return CheckResult(passed=False, evidence="the plan is refused:\n" + "\n".join(
            f"- {p}" for p in checked.problems))
    try:
        committed, notes = await already_committed(root, checked.features,
                                                   verify=checked.verify, settings=settings)
    except (g.GitFailed, locks.Busy, OSError) as exc:
        raise own_failure(str(exc)) from exc
    if len(committed) == len(checked.features):
        return CheckResult(passed=False, evidence="the plan is refused:\n- " + nothing_left(
            committed))
    graph = feature_graph(checked.features, verify=checked.verify, settings=settings,
                          plan_id=str(params["plan_id"]), committed=committed)
    cannot = _verify_problems(root, graph)
    if cannot:
        return CheckResult(passed=False, evidence="the plan is refused:\n" + "\n".join(
            f"- {p}" for p in cannot))
    try:
        out = write_feature_graph(root, graph)
    except OSError as exc:
        raise own_failure(f"rein could not write the feature graph: {exc}") from exc
    from rein.formats.ags import validate_path

    report = validate_path(out)
    if report.errors:
        found = "; ".join(f"{f.code} {f.message}" for f in report.errors)
        return CheckResult(passed=False, evidence=f"the feature graph rein wrote from the "
                           f"plan does not validate: {found}")
    order = ", ".join(f.id for f in checked.features if f.id not in committed)
    said = [(f"plan accepted: {len(checked.features) - len(committed)} features, built in "
             f"the order {order}; graph {params['graph']} (digest {report.digest})")]
    if committed:
        said.append(kept_text(committed))
    return CheckResult(passed=True, evidence="\n".join(said + notes))


def kept_text(committed: Mapping[str, str]) -> str:
    return ("already committed with the same definition, and their verify passes on the "
            "current tree, so not built again: " + ", ".join(
                f"{feature} ({sha})" for feature, sha in committed.items()))


def nothing_left(committed: Mapping[str, str]) -> str:
    return ("every feature of the plan is " + kept_text(committed) + "; there is nothing to "
            "build: plan only what is new or changed")


def _verify_problems(root: Path, graph: Mapping[str, Any]) -> list[str]:
    """Each distinct verify (and smoke) command of the feature graph that cannot pass
    whatever a feature does, checked as it will run: in the target, on this PATH."""
    from rein.dev.interpreter import problem

    seen: set[tuple[str, ...]] = set()
    out: list[str] = []
    for node in (graph.get("nodes") or {}).values():
        for criterion in node.get("success", {}).get("criteria") or []:
            params = criterion.get("params") or {}
            for argv in (params.get("smoke"), params.get("verify")):
                if not argv or tuple(argv) in seen:
                    continue
                seen.add(tuple(argv))
                cwd = root / str(params.get("target", "."))
                found = problem(list(argv), cwd if cwd.is_dir() else root)
                if found:
                    out.append(found)
    return out


async def verify(request: CheckRequest) -> CheckResult:
    """The feature changed something and its verify command passes, run by rein."""
    p = request.params
    root = request.workspace
    target = root / str(p["target"])
    _VERIFIED.pop(_verified_key(root, p), None)  # only a verify that passes now counts
    try:
        with _repository(root, str(p["plan_id"])) as repo:
            done = repo.committed(str(p["plan_id"]), str(p["feature"]))
            snap = repo.snapshot()
            head = repo.head()
            changed = snap.changed(repo.tree_entries(head), g.not_work(str(p["target"])))
            if done is None and not changed:
                return CheckResult(passed=False, evidence="the change is empty: nothing "
                                   f"outside {', '.join(g.not_work(str(p['target'])))} "
                                   "differs from the last commit, so there is nothing to "
                                   "verify for this feature; implement it")
            outside = _outside(changed, str(p["target"])) if head is not None else []
            if outside:
                raise _outside_fault(outside, str(p["target"]))
            tree = repo.write_tree(snap)
    except g.NotCommittable as exc:
        return CheckResult(passed=False, evidence=str(exc))
    for label, argv in (("smoke", p.get("smoke")), ("verify", p["verify"])):
        if not argv:
            continue
        result = await run_command(list(argv), target, float(p["timeout_seconds"]))
        if result is not None:
            return CheckResult(passed=False, evidence=f"{label} failed: {result}")
    _VERIFIED[_verified_key(root, p)] = (request.attempt, tree)
    return CheckResult(passed=True, evidence=f"`{shlex.join(p['verify'])}` passed")


def _outside(paths: list[str], target: str) -> list[str]:
    """``paths`` outside the target directory. The feature's turn may write only in it, and
    the driver protocol refuses a write elsewhere during the turn; one made between turns
    (while an approval waits) would otherwise be committed with the next feature."""
    target = target.strip("/")
    if target in ("", "."):
        return []
    return [path for path in paths if not g.excluded(path, (target,))]


def _outside_fault(paths: list[str], target: str) -> HarnessFault:
    """Not the feature's work, and not its attempt's to undo (its turn may not write
    there): the attempt waits, uncounted, until they are gone or committed."""
    return HarnessFault(f"paths outside the target {target}/ changed since the last commit, "
                        f"and rein would commit them as this feature: "
                        f"{', '.join(paths[:10])}", code="DEV011",
                        hint="the attempt is not counted; undo them, or a person commits "
                             "them (a change of their own), outside an agent's turn; then "
                             "run `rein dev`, which verifies the same attempt again")


def handoff(request: CheckRequest) -> CheckResult:
    """Append to progress.txt and commit the feature; the tree is clean afterwards. Only
    the tree this attempt verified is committed, and a feature is committed once."""
    p = request.params
    root = request.workspace
    plan_id, feature = str(p["plan_id"]), str(p["feature"])
    try:
        with _repository(root, plan_id) as repo:
            return _handoff(repo, p, plan_id, feature, request.attempt)
    except g.NotCommittable as exc:
        return CheckResult(passed=False, evidence=f"nothing was committed: {exc}")


@contextlib.contextmanager
def _repository(root: Path, plan_id: str) -> Iterator[g.Repo]:
    """The repository under rein's lock; rein's own failures (git, a lock, the disk)
    become :class:`HarnessFault`, which costs the feature no attempt. Commits an agent's
    sandbox kept out of ``.git`` stay kept back (the next commit goes on top of them):
    `rein dev` writes them in, checked against the run store, which a check does not
    read."""
    try:
        with locks.held(root):
            repo = g.Repo(root)
            yield repo
    except (g.GitFailed, locks.Busy) as exc:
        raise own_failure(str(exc)) from exc
    except OSError as exc:
        raise own_failure(f"{type(exc).__name__}: {exc}") from exc


def own_failure(what: str) -> HarnessFault:
    return HarnessFault(f"rein's own git work failed, not the agent's: {what}",
                        code="DEV009",
                        hint="the attempt is not counted; fix the cause (a git process "
                             "still running in the repository, a full disk, permissions), "
                             "then run `rein dev`, which runs the same attempt again")


def _handoff(repo: g.Repo, p: Any, plan_id: str, feature: str,
             attempt: int) -> CheckResult:
    root = repo.root
    verified = _VERIFIED.pop(_verified_key(root, p), None)
    already = repo.committed(plan_id, feature)
    if already is not None:  # a resumed attempt whose commit landed before rein died
        # Its trailer is not proof: anyone may write it into a commit. Only a commit of
        # the very tree this attempt verified is taken as the feature's.
        if verified is None or verified != (attempt, repo.tree_of(already)):
            return CheckResult(passed=False, evidence=f"commit {already} says it is feature "
                               f"{feature} (its Rein-Dev-Feature line), but it is not a "
                               "commit of the tree this attempt verified; nothing was "
                               "committed (rein commits each feature itself: remove a "
                               "commit made by hand)")
        head = repo.head()
        if head is not None and not repo.snapshot().changed(repo.tree_entries(head),
                                                            exclude=(".rein",)):
            repo.sync_index(head)  # rein may have died before it set the index
        return CheckResult(passed=True, evidence=f"feature {feature} is committed as "
                           f"{_named(repo, already)}")
    snap = repo.snapshot()
    if verified is None or verified != (attempt, repo.write_tree(snap)):
        return CheckResult(passed=False, evidence="the tree is not the one this attempt "
                           "verified; nothing was committed")
    summary = snap.changed(repo.tree_entries(repo.head()), g.not_work(str(p["target"])))
    title = one_line(str(p["title"]))
    line = (f"Feature {feature} - {title}: {len(summary)} path(s) changed "
            f"({', '.join(summary[:6])}{', ...' if len(summary) > 6 else ''}). "
            f"Verified with: {shlex.join(p['verify'])}. Result: PASS (run by rein)\n")
    progress = Path(str(p["target"])) / "progress.txt"
    refused = _append(root, progress.as_posix().removeprefix("./"), line)
    if refused is not None:
        return CheckResult(passed=False, evidence=f"nothing was committed: {refused}")
    # The verified snapshot and the line rein appended, nothing read since (progress.txt
    # only where git would record it: tracked, or not ignored).
    rel = progress.as_posix().removeprefix("./")
    recorded = rel in snap.entries or not repo.ignored(rel)
    tree = repo.write_tree(repo.with_file(snap, rel) if recorded else snap)
    message = (f"feat(dev): feature {feature} - {title[:72]}\n\n"
               f"Verified with: {shlex.join(p['verify'])}\n\n"
               f"Rein-Dev-Feature: {plan_id}/{feature}\n"
               + (f"Rein-Dev-Definition: {p['definition']}\n" if p.get("definition") else ""))
    sha = _named(repo, repo.commit(tree, message))
    left = repo.snapshot().changed(repo.tree_entries(tree), exclude=(".rein",))
    if left:
        return CheckResult(passed=False, evidence=f"committed {sha}, but the tree is not "
                           f"clean afterwards: {', '.join(left[:10])}")
    return CheckResult(passed=True, evidence=f"committed feature {feature} as {sha}")


def _named(repo: g.Repo, sha: str) -> str:
    """How the evidence names a feature's commit: its short id, or its full id when it is
    kept back from a read-only ``.git`` (`rein dev` writes in only the commits the run
    store records by their full id)."""
    return repo.full(sha) if repo.deferred else repo.short(sha)


def _verified_key(root: Path, p: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(Path(root).resolve()), str(p["plan_id"]), str(p["feature"]))


def one_line(text: str) -> str:
    """``text`` as one line of a commit message or of progress.txt: line breaks and other
    control characters become spaces (git refuses a NUL in a message; a line break would
    end the subject, or put a line of the plan's words among the lines rein reads back)."""
    return " ".join(_CONTROL.sub(" ", text).split())


def _append(root: Path, relative: str, line: str) -> str | None:
    """Append ``line`` to ``relative`` (progress.txt), never through a symlink, and once: an
    attempt run again after rein's own failure finds it there already. Why not, or None."""
    path = root / relative
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                     | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENOTDIR, errno.ENXIO):
            return f"{relative} is not a regular file rein can append to ({exc.strerror})"
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return f"{relative} is not a regular file"
        data = line.encode("utf-8")
        if info.st_size < len(data) or os.pread(fd, len(data), info.st_size - len(data)) != data:
            os.write(fd, data)
    finally:
        os.close(fd)
    return None
