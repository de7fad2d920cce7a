"""The development flow's checkers: rein, not the agent, decides a plan, a verify, a handoff.

Registered under the ``rein.checkers`` entry-point group (``rein.dev.plan``,
``rein.dev.verify``, ``rein.dev.handoff``), so the engine calls them as ``external``
criteria of the flow's graphs, inside the run's lock, after every ``rein submit``. A
failure's evidence is the feedback of the next attempt, so it names the specific reason.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

from rein.dev import git as g
from rein.dev.graphs import feature_graph, settings_from, write_feature_graph
from rein.dev.plan_check import check_plan
from rein.engine.criteria.model import CheckRequest, CheckResult
from rein.tools.process import run_process

MAX_PLAN_BYTES = 1_000_000
_RELEVANT = re.compile(r"FAIL|Error|error:|assert|Traceback|^E\s|^>\s|not ok|panic", re.MULTILINE)
MAX_FEEDBACK_LINES = 20
VERIFIED = ".rein/dev/verified"


def plan(request: CheckRequest) -> CheckResult:
    """The plan the driver wrote is valid: then the feature graph is written from it."""
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
    graph = feature_graph(checked.features, verify=checked.verify, settings=settings,
                          plan_id=str(params["plan_id"]))
    out = write_feature_graph(root, graph)
    from rein.formats.ags import validate_path

    report = validate_path(out)
    if report.errors:
        found = "; ".join(f"{f.code} {f.message}" for f in report.errors)
        return CheckResult(passed=False, evidence=f"the feature graph rein wrote from the "
                           f"plan does not validate: {found}")
    order = ", ".join(f.id for f in checked.features)
    return CheckResult(passed=True, evidence=f"plan accepted: {len(checked.features)} "
                       f"features, built in the order {order}; graph {params['graph']} "
                       f"(digest {report.digest})")


async def verify(request: CheckRequest) -> CheckResult:
    """The feature changed something and its verify command passes, run by rein."""
    p = request.params
    root = request.workspace
    target = root / str(p["target"])
    with g.private_hooks() as hooks:
        done = g.committed(root, hooks, str(p["plan_id"]), str(p["feature"]))
        if done is None and not g.changed_paths(root, hooks):
            return CheckResult(passed=False, evidence="the change is empty: nothing outside "
                               f"{', '.join(g.NOT_WORK)} differs from the last commit, so "
                               "there is nothing to verify for this feature; implement it")
        tree = g.tree_of_worktree(root, hooks)
    for label, argv in (("smoke", p.get("smoke")), ("verify", p["verify"])):
        if not argv:
            continue
        result = await _run(list(argv), target, float(p["timeout_seconds"]))
        if result is not None:
            return CheckResult(passed=False, evidence=f"{label} failed: {result}")
    marker = root / VERIFIED / f"{p['feature']}.json"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"attempt": request.attempt, "tree": tree}))
    return CheckResult(passed=True, evidence=f"`{shlex.join(p['verify'])}` passed")


def handoff(request: CheckRequest) -> CheckResult:
    """Append to progress.txt and commit the feature; the tree is clean afterwards. Only
    the tree this attempt verified is committed, and a feature is committed once."""
    p = request.params
    root = request.workspace
    plan_id, feature = str(p["plan_id"]), str(p["feature"])
    with g.private_hooks() as hooks:
        try:
            return _handoff(root, hooks, p, plan_id, feature, request.attempt)
        except (g.GitFailed, OSError) as exc:
            return CheckResult(passed=False, evidence=f"handoff failed: {exc}")


def _handoff(root: Path, hooks: str, p: Any, plan_id: str, feature: str,
             attempt: int) -> CheckResult:
    already = g.committed(root, hooks, plan_id, feature)
    if already is not None:  # a resumed attempt whose commit landed before rein died
        return CheckResult(passed=True, evidence=f"feature {feature} is committed as "
                           f"{already}")
    marker = root / VERIFIED / f"{feature}.json"
    try:
        verified = json.loads(marker.read_text())
    except (OSError, ValueError):
        verified = {}
    if verified.get("attempt") != attempt or verified.get("tree") != g.tree_of_worktree(
            root, hooks):
        return CheckResult(passed=False, evidence="the tree is not the one this attempt "
                           "verified; nothing was committed")
    target = root / str(p["target"])
    summary = g.changed_paths(root, hooks)
    line = (f"Feature {feature} - {p['title']}: {len(summary)} path(s) changed "
            f"({', '.join(summary[:6])}{', ...' if len(summary) > 6 else ''}). "
            f"Verified with: {shlex.join(p['verify'])}. Result: PASS (run by rein)\n")
    progress = target / "progress.txt"
    with progress.open("a", encoding="utf-8") as fh:
        fh.write(line)
    who = g.identity_args(root, hooks)
    g.git(root, "add", "-A", "--", ".", ":(exclude).rein", hooks=hooks)
    message = (f"feat(dev): feature {feature} - {str(p['title'])[:72]}\n\n"
               f"Verified with: {shlex.join(p['verify'])}\n\n"
               f"Rein-Dev-Feature: {plan_id}/{feature}\n")
    g.git(root, *who, "commit", "-q", "--no-verify", "-m", message, hooks=hooks)
    left = g.changed_paths(root, hooks, exclude=(".rein",))
    sha = g.git(root, "rev-parse", "--short", "HEAD", hooks=hooks).strip()
    if left:
        return CheckResult(passed=False, evidence=f"committed {sha}, but the tree is not "
                           f"clean afterwards: {', '.join(left[:10])}")
    return CheckResult(passed=True, evidence=f"committed feature {feature} as {sha}")


async def _run(argv: list[str], cwd: Path, timeout: float) -> str | None:
    """None when the command passes; else why it failed, with the relevant lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REIN_SECRET_",
                                                                     "GIT_"))}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"})
    try:
        done = await run_process(argv, cwd=cwd, env=env, timeout=timeout,
                                 max_output_bytes=200_000)
    except OSError as exc:
        return f"`{shlex.join(argv)}` could not be started in {cwd}: {exc}"
    if done.timed_out:
        return (f"`{shlex.join(argv)}` took longer than {timeout:g} s; its process group "
                "was killed")
    if done.exit_code == 0:
        return None
    return (f"`{shlex.join(argv)}` exited {done.exit_code}:\n"
            + relevant_lines(done.stdout + "\n" + done.stderr))


def relevant_lines(output: str) -> str:
    """The lines that say what failed (FAILED ..., assert ..., error: ...) and the last
    line, not the first line of output (pytest's first line is its progress dots)."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    picked = [ln for ln in lines if _RELEVANT.search(ln)][-MAX_FEEDBACK_LINES:]
    if lines and (not picked or picked[-1] != lines[-1]):
        picked.append(lines[-1])
    return "\n".join(f"  {ln[:300]}" for ln in picked) or "  (no output)"
