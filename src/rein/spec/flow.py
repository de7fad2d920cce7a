"""`rein spec`: start or continue the specification flow, one step of its state machine.

The flow is runs of the one engine, found again from ``.rein/spec/flow.json``: the current
run writes, checks and approves the documents (:mod:`rein.spec.graphs`). This module only
starts a run, resumes one a stopped rein left running, publishes READY once a run has
succeeded (:mod:`rein.spec.publish`), reopens the bundle when the brief or an approved
document changed, and says where the flow stands; everything in between is the engine's,
driven by `rein next` and `rein submit`.

Reopening: a document depends on every document before it and on the brief. When one of
them changes after it was approved (READY or not), a new run writes that document and the
ones after it again, each checked by rein and approved by a person; the documents before it
stay as approved. Ids stay stable across the reopening (:mod:`rein.spec.documents`).
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rein.core.flows import resumed_note
from rein.core.ids import RunId
from rein.core.reading import read_json_object
from rein.core.writing import write_atomic
from rein.engine.service import Harness
from rein.errors import Refused, ReinError
from rein.spec.paths import FLOW_FILE, NAMES, PATHS, PLAN_PATH, TITLES
from rein.spec.provenance import brief_files, sources

# Each stop's exit code: the same stops as `rein dev`, READY being its `done`.
# ``changed``: READY, but the brief or an approved document changed since (`rein spec
# status` says so; `rein spec` reopens what depends on it).
EXIT = {"waiting": 3, "ready": 0, "changed": 0, "failed": 1, "timeout": 1, "budget": 4,
        "cancelled": 1}


def load_flow(workspace: Path) -> dict[str, Any] | None:
    """The flow's state, or ``None`` when there is none (or it is unreadable)."""
    return read_json_object(workspace / FLOW_FILE)


def save_flow(workspace: Path, flow: Mapping[str, Any]) -> None:
    write_atomic(workspace / FLOW_FILE, json.dumps(dict(flow), indent=2, sort_keys=True))


def _settings(harness: Harness) -> dict[str, Any]:
    from rein.spec.settings import load

    return load(harness.config.get("spec"), harness.config.get("dev"))


async def advance(harness: Harness, *, new: bool = False) -> dict[str, Any]:
    """Start (``new``, or no flow yet) or continue the flow; where it stands afterwards."""
    ws = harness.workspace
    settings = _settings(harness)
    flow = load_flow(ws)
    notices: list[str] = []
    if flow is not None and new:
        notices += await _abandon(harness, flow)
        flow = None
    if flow is None:
        flow = {"spec_id": dt.datetime.now(dt.UTC).strftime("%Y%m%d%H%M%S") + "-"
                + secrets.token_hex(3), "runs": [], "published": None}
        await _start(harness, flow, settings, start=0, reopened={})
    resumed = False
    for _ in range(len(NAMES) + 3):  # each pass acts at most once; bounded all the same
        run_id = str(flow["run"])
        pending = harness.driver_status(run_id)
        if not resumed and pending.get("status") == "waiting" and \
                pending.get("for") == "resume":
            interrupted = harness.run(run_id).status.value == "running"
            # A rein process died mid-turn, or an answer waits to be taken up: continue here.
            await harness.resume(run_id)
            notices.append(resumed_note(run_id, interrupted=interrupted))
            resumed = True
            continue
        state = harness.run(run_id).status.value
        declined = (_declined(flow, harness) or _refused(flow, harness)) \
            if state == "failed" else None
        if declined is not None:  # a person's "no" is the feedback of a new version
            start, reopened = declined
            notices += [f"reopened {PATHS[n]}: {why}" for n, why in reopened.items()]
            await _start(harness, flow, settings, start=start, reopened=reopened)
            continue
        if state != "succeeded":
            break
        reopen = _changed(ws, flow, harness)
        if reopen is not None:
            start, reopened = reopen
            notices += [f"reopened {PATHS[n]}: {why}" for n, why in reopened.items()]
            await _start(harness, flow, settings, start=start, reopened=reopened)
            continue
        if (flow.get("published") or {}).get("run") != run_id:
            notices.append(_publish(harness, flow, settings))
        break
    return _where(harness, flow, notices)


def status(harness: Harness) -> dict[str, Any]:
    """Where the flow stands, changing nothing (`rein spec status`)."""
    flow = load_flow(harness.workspace)
    if flow is None:
        raise ReinError(f"no specification flow in {harness.workspace}", code="SPEC404",
                        hint="start one with `rein spec`")
    notices = []
    reopen = None
    if harness.run(str(flow["run"])).status.value == "succeeded":
        reopen = _changed(harness.workspace, flow, harness)
        if reopen is not None:
            notices += [f"{PATHS[n]} will be reopened by `rein spec`: {why}"
                        for n, why in reopen[1].items()]
    where = _where(harness, flow, notices)
    if reopen is not None:
        where.update(_stop("changed", f"the specification changed since it was "
                           f"{'published' if where['reason'] == 'ready' else 'approved'}; "
                           f"{PLAN_PATH} is out of date", "run `rein spec`: it reopens the "
                           "documents that depend on the change"))
    return where


async def _start(harness: Harness, flow: dict[str, Any], settings: Mapping[str, Any], *,
                 start: int, reopened: Mapping[str, str]) -> None:
    from rein.dev.briefs import read_briefs
    from rein.spec import graphs

    ws = harness.workspace
    if not brief_files(ws):
        raise ReinError("no brief in specs/ (*.md or *.txt)", code="SPEC002",
                        hint="describe what to build in specs/brief.md, then run `rein spec`")
    briefs = read_briefs(ws, int(settings["max_brief_bytes"]))
    (ws / ".rein").mkdir(exist_ok=True)
    ignore = ws / ".rein" / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    graph = graphs.spec_graph(brief=briefs.text, settings=settings,
                              spec_id=str(flow["spec_id"]), start=start, reopened=reopened)
    path = graphs.write_graph(ws, graph)
    prepared = await harness.prepare(path, given={})
    # rein's own graph only asks for documents and a person's approvals: it is approved
    # by starting the flow, recorded as the approver rein knows (as `rein dev`'s planning).
    outcome = await harness.start(prepared, approved=prepared.digest)
    if flow.get("run"):
        kept = {PATHS[n] for n in NAMES[:start]}
        flow["approved"] = {k: v for k, v in approved_digests(flow, harness).items()
                            if k in kept}
    flow["brief"] = {n: d for n, d in sources(ws).items() if n in brief_files(ws)}
    flow["run"] = str(outcome.run_id)
    flow["start"] = start
    flow["runs"] = [*flow.get("runs", []), str(outcome.run_id)]
    save_flow(ws, flow)


def _changed(ws: Path, flow: Mapping[str, Any], harness: Harness
             ) -> tuple[int, dict[str, str]] | None:
    """The first document to write again and why each is reopened, or None: nothing an
    approved document depends on (the brief, the documents before it, itself) changed
    since it was approved. Read from the approvals themselves: each binds the content
    digests of the files it showed."""
    now = sources(ws)
    approved = approved_digests(flow, harness)
    first: tuple[int, str] | None = None
    briefs = sorted(n for n in {*(flow.get("brief") or {}), *brief_files(ws)}
                    if (flow.get("brief") or {}).get(n) != now.get(n))
    if briefs:
        first = (0, f"the brief changed ({', '.join(briefs)})")
    else:
        for index, name in enumerate(NAMES):
            if approved.get(PATHS[name]) != now.get(PATHS[name]):
                first = (index, "it was edited after it was approved")
                break
    if first is None:
        return None
    start, why = first
    reopened = {NAMES[start]: why}
    for name in NAMES[start + 1:]:
        reopened[name] = f"{PATHS[NAMES[start]]}, which it depends on, is open again"
    return start, reopened


def _declined(flow: Mapping[str, Any], harness: Harness
              ) -> tuple[int, dict[str, str]] | None:
    """When a person declined a document (or the bundle) of the current run: the first
    document shown to write again, and why each is reopened (the person's note)."""
    rows = [r for r in harness.store.approvals(run_id=flow["run"])
            if r.kind.value == "gate" and r.status.value == "declined"]
    if not rows:
        return None
    shown = [n for n in NAMES if PATHS[n] in (rows[-1].request.get("files") or {})]
    if not shown:
        return None
    note = str((rows[-1].answer or {}).get("note") or "").strip() or "no reason given"
    start = NAMES.index(shown[0])
    reopened = {n: f"a person declined it: {note}" for n in shown}
    for name in NAMES[start + 1:]:
        reopened.setdefault(name, f"{PATHS[shown[0]]}, which it depends on, is open again")
    return start, reopened


def _refused(flow: Mapping[str, Any], harness: Harness
             ) -> tuple[int, dict[str, str]] | None:
    """When a gate of the current run failed because a document it shows was edited after
    rein checked it and no longer passes the check (``x-rein-recheck``): that document is
    written again, with the check's reasons, and every document after it."""
    from rein.engine.run.kinds.gate import RECHECK

    for node in harness.store.nodes(flow["run"]):
        refusal = node.record.get(RECHECK) if node.status.value == "failed" else None
        if not isinstance(refusal, Mapping):
            continue
        name = str(refusal.get("node") or "").removeprefix("write_")
        if name not in NAMES:
            continue
        results = (refusal.get("success") or {}).get("results") or []
        said = "\n".join(str(r.get("evidence") or r.get("error") or "failed")
                         for r in results if isinstance(r, Mapping) and not r.get("passed"))
        start = NAMES.index(name)
        reopened = {name: "it was edited after rein checked it, and rein refuses it now "
                          f"(no person was asked):\n{said}"}
        for later in NAMES[start + 1:]:
            reopened[later] = f"{PATHS[name]}, which it depends on, is open again"
        return start, reopened
    return None


def approved_digests(flow: Mapping[str, Any], harness: Harness) -> dict[str, str]:
    """Each approved document's content digest as a person saw it: those kept from earlier
    runs, and those of the current run's accepted gates.

    The kept ones are listed in the flow's file, in the workspace, which the agent may
    write, and so is the current run's id: a digest counts only where it is the one the
    last accepted gate showing that file showed, of every run of the flow's graph here, in
    the run store (an entry of the agent's own making would keep a document it edited
    from being reopened, and publish it unapproved; one naming a version a person approved
    once, or an earlier run named as the current one, would bring back what they approved
    a change of since)."""
    latest = _last_accepted(harness)
    out = {k: str(v) for k, v in (flow.get("approved") or {}).items()
           if latest.get(k) == str(v)}
    out.update((k, v) for k, v in _accepted_files(harness, str(flow["run"]))
               if latest.get(k) == v)
    return out


def _last_accepted(harness: Harness) -> dict[str, str]:
    """Each file's digest as the last accepted gate that showed it showed it, of every
    specification run of this workspace (the flow's file lists runs, but the agent may
    leave one out)."""
    from rein.spec.paths import GRAPH_ID

    runs = [str(r.run_id) for r in harness.runs_here() if r.graph_id == GRAPH_ID]
    rows = [r for r in harness.store.approvals(run_ids=runs) if r.kind.value == "gate"
            and r.status.value == "accepted"] if runs else []
    out: dict[str, str] = {}
    for row in sorted(rows, key=lambda r: r.answered_at or r.created_at):
        out.update({str(k): str(v) for k, v in (row.request.get("files") or {}).items()})
    return out


def _accepted_files(harness: Harness, run_id: str) -> list[tuple[str, str]]:
    """The files, with their digests, that the accepted gates of ``run_id`` showed, in
    the order they were answered."""
    return [(str(k), str(v)) for row in harness.store.approvals(run_id=RunId(run_id))
            if row.kind.value == "gate" and row.status.value == "accepted"
            for k, v in (row.request.get("files") or {}).items()]


def _publish(harness: Harness, flow: dict[str, Any], settings: Mapping[str, Any]) -> str:
    """READY: the approved bundle, checked whole once more, becomes the development plan."""
    from rein.spec.checks import bundle_of, published_ids
    from rein.spec.documents import check, declared
    from rein.spec.publish import compose, write_plan

    ws = harness.workspace
    rows = [r for r in harness.store.approvals(run_id=flow["run"])
            if r.kind.value == "gate" and r.status.value == "accepted"]
    wanted = set(settings.get("roles") or [])
    for row in rows:  # a run without the roles' gates (started before they were set)
        if wanted and not wanted & set((row.answer or {}).get("roles") or []):
            raise Refused(f"approval {row.approval_id} was not given by a holder of "
                          f"{' or '.join(sorted(wanted))}", code="SPEC003",
                          hint="start again with `rein spec start --new`; a person holding "
                               "the role approves the documents")
    bundle = bundle_of(ws)
    for name in NAMES:
        problems = check(name, bundle.get(name), bundle,
                         published=published_ids(ws, name),
                         max_features=int(settings["max_features"]))
        if problems:
            raise ReinError(f"the approved bundle does not hold together: {PATHS[name]}: "
                            + "; ".join(problems), code="SPEC004",
                            hint="edit the document it names (`rein spec` then reopens it "
                                 "and the ones after it), or `rein spec start --new`")
    plan, _problems = compose(bundle, max_features=int(settings["max_features"]))
    # Every id published stays: a retired requirement id too (it is never used again).
    published = {name: sorted({*(published_ids(ws, name) or []),
                               *declared(name, bundle[name])}) for name in NAMES}
    written = write_plan(ws, plan, spec_id=str(flow["spec_id"]), ids=published)
    flow["approved"] = approved_digests(flow, harness)
    flow["published"] = {"run": flow["run"], "at": written["spec"]["published_at"],
                         "sources": written["spec"]["sources"]}
    save_flow(ws, flow)
    return (f"published {PLAN_PATH}: {len(plan['features'])} slice(s); `rein dev` builds "
            "it")


async def _abandon(harness: Harness, flow: Mapping[str, Any]) -> list[str]:
    """`start --new`: the earlier flow's unfinished run is cancelled, and said so."""
    run_id = flow.get("run")
    if not run_id:
        return []
    try:
        if harness.run(run_id).status.terminal:
            return []
        await harness.cancel(run_id, note="rein spec start --new")
    except Refused as exc:
        if exc.code != "RUN010":
            raise
        return [f"left the earlier flow's run {run_id} to the workspace it belongs to"]
    except ReinError:
        return []
    return [f"cancelled the earlier flow's run {run_id}"]


def _where(harness: Harness, flow: Mapping[str, Any], notices: list[str]) -> dict[str, Any]:
    run_id = str(flow["run"])
    pending = harness.driver_status(run_id)
    documents = documents_of(harness, flow)
    stop = stop_of(pending, flow=flow, documents=documents)
    return {"flow": "rein.spec/1", "spec_id": flow["spec_id"], "run_id": run_id,
            **stop, "documents": documents, "published": flow.get("published"),
            "plan": PLAN_PATH if flow.get("published") else None,
            "notices": notices, "instruction": pending}


def documents_of(harness: Harness, flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each document with its state: ``approved`` (kept from before a reopening, or
    approved in this run), ``accepted`` (checked by rein, a person's approval to come),
    ``writing``, ``failed``, ``cancelled``, ``not run`` (one before it failed) or
    ``planned``."""
    start = _first_written(harness, flow)
    rows = {n.node_id: n for n in harness.store.nodes(flow["run"])}
    bundle_gate = rows.get("approve_bundle")
    out = []
    for index, name in enumerate(NAMES):
        write, gate = rows.get(f"write_{name}"), rows.get(f"approve_{name}") or bundle_gate
        attempts = len(list(write.record.get("attempts") or [])) if write else 0
        if index < start or gate is not None and gate.status.value == "succeeded":
            state = "approved"
        elif write is None:
            state = "planned"
        elif write.status.value == "succeeded":
            state = "accepted"
        elif write.status.value in ("failed", "cancelled"):
            state = write.status.value
        elif write.status.value in ("skipped", "blocked"):
            state = "not run"  # a document before it failed
        elif write.status.value == "pending":
            state = "planned"
        else:
            state = "writing"
        item = {"document": name, "path": PATHS[name], "title": TITLES[name],
                "status": state, "attempts": attempts}
        if state == "failed" and write is not None and attempts:
            item["last_failure"] = _evidence((write.record.get("attempts") or [])[-1])
        out.append(item)
    return out


def _first_written(harness: Harness, flow: Mapping[str, Any]) -> int:
    """The index of the first document the current run writes (those before it are kept
    from earlier runs), read from the run's node layout in the run store: the flow's file
    says it too, but the agent may write that file (and have rein show as approved
    documents no person has seen)."""
    from rein.engine.run.record_order import LAYOUT

    order = (harness.run(str(flow["run"])).binding.get(LAYOUT) or {}).get("")
    if not order:  # a run stored before runs kept their layout
        return int(flow.get("start", 0))
    first = next((n.removeprefix("write_") for n in order if n.startswith("write_")), "")
    return NAMES.index(first) if first in NAMES else 0


def _evidence(attempt: Mapping[str, Any]) -> str:
    """What the last attempt of a failed document was told: its check's evidence."""
    results = (attempt.get("success") or {}).get("results") or []
    said = [str(r.get("evidence") or r.get("error") or "failed") for r in results
            if isinstance(r, Mapping) and not r.get("passed")]
    return "\n".join(said) or str(attempt.get("error") or attempt.get("status") or "")


def stop_of(pending: Mapping[str, Any], *, flow: Mapping[str, Any],
            documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The reason, message, next action and exit code for what ``rein next`` reported."""
    state = str(pending.get("status"))
    if state == "instruction":
        node = str(pending.get("node", ""))
        name = node.removeprefix("write_")
        what = f"the {TITLES[name]} ({PATHS[name]})" if name in TITLES else node
        return _stop("waiting", f"waiting for the driver: {what} (attempt "
                     f"{pending.get('attempt')})", "do the instruction above, write the "
                     "envelope to .rein/inbox.json and run `rein submit`",
                     exit_code=int(pending.get("exit_code", 0)))
    if state == "waiting":
        if pending.get("for") == "approval":
            shown = [d["path"] for d in documents if d["status"] == "accepted"]
            return _stop("waiting", "waiting for a person to approve "
                         + (", ".join(shown) or "the bundle"),
                         "stop: a person reads the document(s) and answers the approval "
                         "(the agent does not, and cannot from its sandbox); then run "
                         "`rein spec`")
        return _stop("waiting", str(pending.get("message", "")),
                     str(pending.get("hint") or "run `rein spec` again"))
    if state == "done":
        if (flow.get("published") or {}).get("run") == flow["run"]:
            return _stop("ready", f"the bundle is approved and published as {PLAN_PATH}",
                         "run `rein dev`: it builds the published plan "
                         "without planning again")
        return _stop("waiting", "the bundle is approved", "run `rein spec` to publish it")
    reason = str(pending.get("reason") or "failed")
    failed = [d for d in documents if d["status"] == "failed"]
    if reason == "failed" and failed:
        return _stop("failed", f"the {failed[0]['title']} ({failed[0]['path']}) was refused "
                     f"{failed[0]['attempts']} time(s); the last time: "
                     f"{failed[0].get('last_failure') or pending.get('message', '')}",
                     "make the brief clearer (or answer what the refusal names in it), "
                     "then `rein spec start --new`")
    return _stop(reason if reason in EXIT else "failed", str(pending.get("message", "")),
                 "`rein spec status`, then `rein spec start --new`")


def _stop(reason: str, message: str, next_action: str, **extra: Any) -> dict[str, Any]:
    return {"reason": reason, "message": message, "next_action": next_action,
            "exit_code": EXIT[reason], **extra}  # an instruction's 0 comes in ``extra``
