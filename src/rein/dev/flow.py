"""`rein dev`: start or continue the development flow, one step of its state machine.

The flow is two runs of the one engine, found again from ``.rein/dev/flow.json``: the
planning run (the driver's plan, rein's check of it, a person's approval of the feature
graph) and the feature run (the approved graph). This module only decides which run is
current, starts the next one when the previous one is done, and says where the flow
stands; everything in between is the engine's, driven by `rein next` and `rein submit`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.flows import resumed_note
from rein.core.reading import read_json_object
from rein.core.writing import write_atomic
from rein.dev.briefs import read_briefs
from rein.dev.paths import FEATURES_PATH, FLOW_FILE
from rein.dev.settings import DevSettings, load_settings
from rein.dev.stops import features_of, read_stop, stop_of
from rein.engine.service import Harness
from rein.errors import Refused, ReinError


def load_flow(workspace: Path) -> dict[str, Any] | None:
    """The flow's state, or ``None`` when there is none (or it is unreadable)."""
    return read_json_object(workspace / FLOW_FILE)


def save_flow(workspace: Path, flow: Mapping[str, Any]) -> None:
    write_atomic(workspace / FLOW_FILE, json.dumps(dict(flow), indent=2, sort_keys=True))


def check_repository(workspace: Path) -> None:
    """The workspace is the root of a git repository (DEV001 otherwise). Read from the file
    system, not by running git: this runs on every turn."""
    if (workspace / ".git").exists():
        return
    top = next((p for p in workspace.parents if (p / ".git").exists()), None)
    if top is None:
        raise Refused(f"{workspace} is not a git repository: the flow commits each feature",
                      code="DEV001", hint="run `git init` here first (no commit is needed)")
    raise Refused(f"{workspace} is inside the repository {top}, not its root",
                  code="DEV001", hint=f"run rein dev in {top} (or --workspace {top}); "
                  "REIN_DEV_TARGET names a directory to build in")


async def advance(harness: Harness, *, new: bool = False,
                  env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Start (``new``, or no flow yet) or continue the flow; where it stands afterwards."""
    ws = harness.workspace
    check_repository(ws)
    settings = load_settings(harness.config.get("dev"), env)
    flow = load_flow(ws)
    notices: list[str] = []
    if flow is not None and new:
        notices += await _abandon(harness, flow)
        flow = None
    if flow is None:
        flow = await _start(harness, settings, notices)
    else:
        check_published(ws, flow)
        if (changed := _brief_changed(ws, flow, settings)) is not None:
            notices.append(changed)
    if (ws / KEPT_BACK).exists():
        notices += _land(harness, flow)
    return await _where(harness, flow, settings, notices, go_on=True)


def advance_read(harness: Harness, env: Mapping[str, str] | None = None
                 ) -> dict[str, Any] | None:
    """What :func:`advance` returns when continuing the flow only reads (a flow exists,
    and no run is to start or resume, no budget to raise): a plain read, without an event
    loop, for the turn an agent takes again and again. ``None`` when the flow must act:
    :func:`advance` does it. Errors are :func:`advance`'s too."""
    ws = harness.workspace
    check_repository(ws)
    settings = load_settings(harness.config.get("dev"), env)
    flow = load_flow(ws)
    if flow is None or (ws / KEPT_BACK).exists():
        return None  # none yet, or commits to write into .git: the flow acts first
    check_published(ws, flow)
    notices = [c] if (c := _brief_changed(ws, flow, settings)) else []
    need, where = _look(harness, flow, notices, go_on=True, skip=frozenset())
    return where if need is None else None


def status(harness: Harness, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Where the flow stands, changing nothing (`rein dev status`); it only reads, so it
    needs no event loop."""
    ws = harness.workspace
    flow = load_flow(ws)
    if flow is None:
        raise ReinError(f"no development flow in {ws}", code="DEV404",
                        hint="start one with `rein dev`")
    settings = load_settings(harness.config.get("dev"), env)
    notices = [c] if (c := _brief_changed(ws, flow, settings)) else []
    try:
        check_published(ws, flow)
    except Refused as exc:
        notices.append(f"{exc.message} ({exc.code}): {exc.hint}")
    _, where = _look(harness, flow, notices, go_on=False, skip=frozenset())
    assert where is not None  # a look that does not go on never asks to act
    return where


async def _start(harness: Harness, settings: DevSettings, notices: list[str]
                 ) -> dict[str, Any]:
    from rein.dev import graphs
    from rein.dev.briefs import read_import
    from rein.dev.plan_check import check_plan

    ws = harness.workspace
    head, dirty = _work_tree(ws)
    if head and dirty:
        raise Refused("the repository has uncommitted changes outside .rein/, specs/ and "
                      f"progress.txt: {', '.join(dirty[:8])}", code="DEV002",
                      hint="commit them first: every feature is committed on its own, so "
                           "the flow starts from a clean tree")
    if not head:
        notices.append("the repository has no commits yet: the first feature's commit will "
                       "also hold what is already here"
                       + (f" ({', '.join(dirty[:8])})" if dirty else ""))
    # rein's state is never part of a feature's commit, nor of the tree that must be clean.
    (ws / ".rein").mkdir(exist_ok=True)
    ignore = ws / ".rein" / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    plan_id = dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(3)
    imported = read_import(ws)
    brief_digest = None
    if imported is not None:
        name, data = imported
        if name == SPEC_PLAN:
            _refuse_changed_spec(ws, data)
        checked = check_plan(data, max_features=settings.max_features)
        if checked.problems:
            raise ReinError(f"{name} cannot be imported:\n" + "\n".join(
                f"- {p}" for p in checked.problems), code="DEV006",
                hint=f"fix {name}, or move it away to plan from the briefs in specs/")
        committed = await _already_committed(ws, checked, settings, notices)
        if len(committed) == len(checked.features):
            from rein.dev.checks import nothing_left

            raise ReinError(f"{name} cannot be imported: {nothing_left(committed)}",
                            code="DEV006", hint=f"add the new work to {name}, or move it "
                            "away to plan from the briefs in specs/")
        graphs.write_feature_graph(ws, graphs.feature_graph(
            checked.features, verify=checked.verify, settings=settings, plan_id=plan_id,
            committed=committed))
        notices.append(f"imported the plan from {name} ({len(checked.features)} features); "
                       "no planning turn is needed")
        brief = ""
    else:
        briefs = read_briefs(ws, settings.max_brief_bytes)
        notices += briefs.notices
        brief, brief_digest = briefs.text, briefs.digest
        (ws / ".rein/dev").mkdir(parents=True, exist_ok=True)
        (ws / ".rein/dev/brief.md").write_text(brief, encoding="utf-8")
    planning = graphs.planning_graph(brief=brief, settings=settings, plan_id=plan_id,
                                     imported=imported is not None)
    path = graphs.write_graph(ws, graphs.PLANNING_PATH, planning)
    prepared = await harness.prepare(path, given={})
    # rein's own planning graph only asks for a plan and a person's approval: it is
    # approved by starting the flow, recorded as the approver rein knows.
    outcome = await harness.start(prepared, approved=prepared.digest)
    flow = {"plan_id": plan_id, "planning_run": outcome.run_id, "features_run": None,
            "brief_digest": brief_digest, "imported": imported[0] if imported else None}
    if imported is not None and imported[0] == SPEC_PLAN:
        flow["imported_digest"] = _file_digest(ws / SPEC_PLAN)
    save_flow(ws, flow)
    return flow


async def _already_committed(ws: Path, checked: Any, settings: DevSettings,
                             notices: list[str]) -> dict[str, str]:
    """The imported plan's features committed under an earlier plan, unchanged and verified
    again on the current tree (:mod:`rein.dev.earlier`); said in ``notices``."""
    from rein.dev import git as g
    from rein.dev import locks
    from rein.dev.checks import kept_text
    from rein.dev.earlier import already_committed

    try:
        committed, notes = await already_committed(ws, checked.features,
                                                   verify=checked.verify, settings=settings)
    except (g.GitFailed, locks.Busy, OSError) as exc:
        raise ReinError(f"rein could not read the repository's commits: {exc}",
                        code="DEV009", hint="fix the cause git names (a git process still "
                        "running here, permissions, a full disk), then run `rein dev` "
                        "again") from exc
    notices += notes + ([kept_text(committed)] if committed else [])
    return committed


# The plan `rein spec` publishes; a flow built from it stops when its specification changes.
SPEC_PLAN = "specs/active/40-development-plan.json"


def check_published(ws: Path, flow: Mapping[str, Any]) -> None:
    """A flow built from the plan `rein spec` published goes on only while that plan is
    the one it imported and its specification is unchanged (DEV010 otherwise)."""
    if flow.get("imported") != SPEC_PLAN:
        return
    path = ws / SPEC_PLAN
    if _file_digest(path) != flow.get("imported_digest"):
        raise Refused(f"{SPEC_PLAN} was published again (or removed) since this flow "
                      "imported it", code="DEV010", hint="run `rein dev start --new` to "
                      "build the plan as it is now published")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        data = None
    _refuse_changed_spec(ws, data)


def _refuse_changed_spec(ws: Path, plan: Any) -> None:
    from rein.spec.provenance import changes

    changed = changes(ws, plan)
    if changed:
        raise Refused(f"the specification of {SPEC_PLAN} changed since it was published: "
                      f"{'; '.join(changed[:8])}", code="DEV010",
                      hint="run `rein spec`: it reopens what changed, a person approves it, "
                           "and it publishes the plan again; then `rein dev start --new`")


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


# The last commit the agent's sandbox kept out of a read-only .git (rein.dev.git.PENDING).
KEPT_BACK = ".rein/dev/git/HEAD"


def _land(harness: Harness, flow: Mapping[str, Any]) -> list[str]:
    """Write the feature commits kept back into ``.git`` where it may be written; what
    it says about them (they stay kept back where ``.git`` is still read-only). Only
    commits the flow's handoffs recorded making are written in: ``.rein/dev/git`` is a
    workspace folder, which an agent kept out of ``.git`` can still write."""
    from rein.dev import git as g
    from rein.dev import locks
    from rein.dev.attempts import checks_of

    ws = harness.workspace
    made = {a["commit"] for run_id in [*(flow.get("earlier_runs") or []),
                                       flow.get("features_run")] if run_id
            for attempts in checks_of(harness, str(run_id)).values()
            for a in attempts if a["commit"]}
    try:
        with locks.held(ws):
            repo = g.Repo(ws)
            landed = repo.land(str(flow["plan_id"]), made=made)
            waiting = 0 if landed else repo.kept_back()
    except (g.GitFailed, locks.Busy, OSError) as exc:
        raise ReinError(f"rein could not write the feature commits it kept back into .git: "
                        f"{exc}", code="DEV009", hint="fix the cause it names, then run "
                        "`rein dev` again; the commits stay in .rein/dev/git meanwhile") from exc
    if landed:
        said = (f"wrote {len(landed)} feature commit(s) into .git that the agent's sandbox "
                f"kept out of it: {', '.join(landed)}")
    else:
        said = (f"{waiting} feature commit(s) wait in .rein/dev/git: .git is read-only here "
                "(an agent's sandbox); `rein dev` run outside it writes them into .git")
    return [said]


def _work_tree(ws: Path) -> tuple[bool, list[str]]:
    """Whether the repository has a commit, and what differs from it (outside NOT_WORK)."""
    from rein.dev import git as g
    from rein.dev import locks

    try:
        with locks.held(ws):
            repo = g.Repo(ws)
            head = repo.head()
            return head is not None, repo.snapshot().changed(repo.tree_entries(head))
    except (g.GitFailed, g.NotCommittable, locks.Busy, OSError) as exc:
        raise ReinError(f"rein could not read the repository's work tree: {exc}",
                        code="DEV009", hint="fix the cause git names (a git process still "
                        "running here, permissions, a full disk), then run `rein dev` "
                        "again") from exc


async def _abandon(harness: Harness, flow: Mapping[str, Any]) -> list[str]:
    """`start --new`: the earlier flow's unfinished runs are cancelled, and said so."""
    out = []
    for key in ("features_run", "planning_run"):
        run_id = flow.get(key)
        if not run_id:
            continue
        try:
            run = harness.run(run_id)
        except ReinError:
            continue
        if run.status.terminal:
            continue
        try:
            await harness.cancel(run_id, note="rein dev start --new")
        except Refused as exc:
            if exc.code != "RUN010":
                raise
            # A copied workspace's flow names the original's runs: they are not its own.
            out.append(f"left the earlier flow's run {run_id} to the workspace it belongs "
                       "to")
            continue
        out.append(f"cancelled the earlier flow's run {run_id}")
    return out


# What continuing the flow may have to do before it can say where it stands.
START_FEATURES, RESUME, RAISE_BUDGET = "start_features", "resume", "raise_budget"


async def _where(harness: Harness, flow: dict[str, Any], settings: DevSettings,
                 notices: list[str], *, go_on: bool) -> dict[str, Any]:
    skip: set[str] = set()
    while True:
        need, where = _look(harness, flow, notices, go_on=go_on, skip=frozenset(skip))
        if need is None:
            assert where is not None
            return where
        if need == START_FEATURES:
            flow["features_run"] = await _start_features(harness, flow)
            save_flow(harness.workspace, flow)
        elif need == RESUME:
            run_id = _current(flow)[0]
            interrupted = harness.run(run_id).status.value == "running"
            # A rein process died mid-turn, or an answer waits to be taken up: continue here.
            await harness.resume(run_id)
            notices.append(resumed_note(run_id, interrupted=interrupted))
            skip.add(RESUME)
        else:
            from rein.dev.budgets import replan_rest

            if (raised := await replan_rest(harness, flow, settings)) is not None:
                save_flow(harness.workspace, flow)
                notices = [*notices, raised]
                skip.clear()  # the raised budget is a fresh start: look at everything again
            else:
                skip.add(RAISE_BUDGET)


def _current(flow: Mapping[str, Any]) -> tuple[str, str]:
    """The current run of the flow and its stage."""
    if flow.get("features_run"):
        return str(flow["features_run"]), "features"
    return str(flow["planning_run"]), "planning"


def _look(harness: Harness, flow: Mapping[str, Any], notices: list[str], *, go_on: bool,
          skip: frozenset[str]) -> tuple[str | None, dict[str, Any] | None]:
    """Where the flow stands, read: ``(None, where)``; or, continuing (``go_on``), what it
    must do first (``START_FEATURES``, ``RESUME`` or ``RAISE_BUDGET``, unless in ``skip``)
    and ``None``."""
    if go_on and START_FEATURES not in skip and flow.get("features_run") is None and \
            harness.run(flow["planning_run"]).status.value == "succeeded":
        return START_FEATURES, None
    run_id, stage = _current(flow)
    pending = harness.driver_status(run_id)
    if go_on and RESUME not in skip and pending.get("status") == "waiting" and \
            pending.get("for") == "resume":
        return RESUME, None
    if go_on:  # acting on the flow: refused (DEV008) where its files are not as approved
        features = features_of(harness, flow)
        stop = stop_of(pending, stage=stage, features=features)
    else:
        features, stop = read_stop(harness, flow, pending, stage=stage)
    if go_on and RAISE_BUDGET not in skip and stage == "features" and \
            stop["reason"] == "budget":
        return RAISE_BUDGET, None
    if stage == "planning" and pending.get("status") == "waiting" and \
            pending.get("for") == "approval":
        asked = [a.get("approval_id") for a in pending.get("approvals") or ()
                 if isinstance(a, Mapping) and a.get("node") == "approve"]
        stop["plan"] = _plan_text(harness, asked[0] if asked else None)
    return None, {"flow": "rein.dev/1", "plan_id": flow["plan_id"], "stage": stage,
                  "run_id": run_id, "planning_run": flow["planning_run"],
                  "features_run": flow.get("features_run"), **stop, "features": features,
                  "notices": notices, "instruction": pending}


async def _start_features(harness: Harness, flow: Mapping[str, Any]) -> str:
    """Start the approved feature graph: only the exact content the person approved (and,
    where approvals are signed, only under a plan approval whose signature verifies:
    APPROVAL005 otherwise)."""
    from rein.engine.service import stale_files

    ws = harness.workspace
    rows = [r for r in harness.store.approvals(run_id=flow["planning_run"])
            if r.kind.value == "gate" and r.status.value == "accepted"]
    if not rows:
        raise Refused("the feature graph has no accepted approval", code="DEV008",
                      hint="see `rein approvals list`")
    wanted = load_settings(harness.config.get("dev")).plan_roles
    held = (rows[-1].answer or {}).get("roles") or []
    if wanted and not set(wanted) & set(held):  # a planning run without the roles' gate
        raise Refused(f"the feature graph was not approved by a holder of "
                      f"{' or '.join(wanted)}", code="DEV008",
                      hint="start again with `rein dev start --new`; a person holding the "
                           "role approves the plan")
    stale = stale_files(ws, rows[-1])
    if stale:
        raise Refused(f"{', '.join(stale)} changed after it was approved", code="DEV008",
                      hint="start again with `rein dev start --new` (a changed plan is "
                           "approved again)")
    prepared = await harness.prepare(ws / FEATURES_PATH, given={})
    # Where approvals are signed, the run is approved by the plan approval itself: its
    # signature is checked now and every time the run continues, with the file it showed.
    outcome = await harness.start(prepared, approved=prepared.digest, under=rows[-1])
    return str(outcome.run_id)


def _plan_text(harness: Harness, approval_id: Any) -> dict[str, Any]:
    """The feature graph as `rein graph plan` draws it, text and mermaid, with its digest:
    the content the pending approval binds (its copy), not the file as it is now, which
    whoever can write the workspace may have changed meanwhile (``changed`` then says so,
    and an accept is refused until the file is the bound content again)."""
    from rein.engine.service import kept_copy, stale_files
    from rein.formats.ags import pictures, render, validate_path
    from rein.formats.ags.plan import build_plan

    ws = harness.workspace
    path = ws / FEATURES_PATH
    row = harness.store.get_approval(approval_id) if isinstance(approval_id, str) else None
    state, copy = kept_copy(row, FEATURES_PATH) if row is not None else ("none", None)
    if copy is None:
        # No copy kept (an approval asked by an older rein): the file, said to be as it is.
        report = validate_path(path)
        shown = "the file as it is now (no copy of what the approval binds was kept)"
    else:
        report = validate_path(path, raw=copy.encode("utf-8"))
        shown = "as the approval presents it"
    if report.document is None or report.errors:
        return {"path": FEATURES_PATH, "errors": [f.message for f in report.errors]}
    plan = build_plan(report.document.data, source=FEATURES_PATH, digest=report.digest)
    # What the criteria will run is the part a reviewer most needs, and the drawn plan
    # names only the checkers: list each feature's command.
    verify = {nid: shlex.join(node["success"]["criteria"][0]["params"]["verify"])
              for nid, node in (report.document.data.get("nodes") or {}).items()}
    changed = bool(row is not None and stale_files(ws, row))
    return {"path": FEATURES_PATH, "digest": report.digest, "verify": verify, "shown": shown,
            "copy": state, "changed": changed,
            "committed": (report.document.data.get("x-rein-dev") or {}).get("committed") or [],
            "text": render.render_text(plan), "mermaid": pictures.render_mermaid(plan)}


def _brief_changed(ws: Path, flow: Mapping[str, Any], settings: DevSettings) -> str | None:
    if flow.get("brief_digest") is None:
        return None
    try:
        now = read_briefs(ws, settings.max_brief_bytes).digest
    except ReinError:
        now = hashlib.sha256(b"").hexdigest()
    if now == flow["brief_digest"]:
        return None
    return ("the briefs in specs/ changed since this plan was made; the flow continues with "
            "the plan it has: run `rein dev start --new` to plan again from the new briefs")
