"""What the driving agent spent on some runs: steps, protocol errors, time, tokens and cost,
per command, per turn, per feature and per model, with totals (``rein runs report``, ``rein
dev report``, the console's report page).

Three sources, each for what it knows:

- **rein's record of calls** (:mod:`rein.workers.driver.calls`): every invocation of
  ``rein next``, ``submit`` and ``dev``, so *steps* (every invocation counted) and
  *protocol errors* (every refusal, the agent's apart from rein's own);
- **the run store**: the turns rein handed out (issued, answered, what the envelope
  reported of its usage), the approvals, the attempts and their ends, so the *time*;
- **the agent's own records** (:mod:`rein.telemetry.agent_logs`), read here and only here
  (never on a turn's path): every model call, attributed by turn token to the turn and the
  command that caused it, priced from :func:`rein.providers.pricing.agent_prices`. A
  message a record names but does not hold (the agent exited before writing it) is
  counted where it would belong (``unwritten_messages`` of its command, its turn, its
  record and the totals): its tokens are in no figure, and the report says so.

A turn's usage is what its model calls add up to where the agent's record was found
(``attributed``), else what the agent reported (``self-reported``), else ``unknown``; a sum
over a part that is unknown is unknown (``null`` in JSON), and the report says what it
knows beside it: the *known part* (``usage_known``: the sum over the turns whose usage is
known, and how many of how many they are), never in its place. Times, one definition each
(:data:`DEFINITIONS`), split so that no instant counts twice: the parts never add up to more
than the whole.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rein.store.base import Store

REPORT = "rein.usage/1"

DEFINITIONS = {
    "wall": "from the run's start to its end (or now), everything included",
    "agent": "from each instruction issued to its envelope accepted: the agent working",
    "person": "from each approval asked to its answer: a person deciding",
    "verification": "from each envelope accepted to its attempt's end: rein checking "
                    "the outputs and running the criteria (the verify, the commit)",
    "other": "wall minus the three: rein's own turns, and time no one was asked anything "
             "(between sessions)",
}
_TOKENS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
           "reasoning_tokens", "total_tokens")
BEFORE = "(before any rein command)"


def build(store: Store, workspace: Path, stages: Sequence[tuple[str, str]], *,
          features: Sequence[Mapping[str, Any]] = (), places: Iterable[Path] = (),
          prices: Mapping[str, Any] | None = None, now: dt.datetime | None = None
          ) -> dict[str, Any]:
    """The report for ``stages`` (``(name, top-level run id)``, in order) of ``workspace``.
    ``features``: the development flow's (``id``, ``title``, ``node``) to group by;
    ``places``: more agent records to read (files or folders) than the default ones."""
    from rein.providers.pricing import AGENT_PRICES_TAKEN, agent_prices
    from rein.workers.driver.calls import read_calls

    moment = now or dt.datetime.now(dt.UTC)
    table = agent_prices(prices)
    runs = [store.get_run(run_id) for _, run_id in stages]
    family = {r.run_id: name for (name, _), root in zip(stages, runs, strict=True)
              if root is not None for r in _family(store, root.run_id)}
    turns = [t for _, run_id in stages for t in store.driver_turns(run_id)]
    tokens = {t.token for t in turns}
    start = min((r.started_at for r in runs if r is not None), default=None)
    end = None if any(r is None or r.finished_at is None for r in runs) else \
        max(str(r.finished_at) for r in runs if r is not None)
    calls = [c for c in read_calls(workspace)
             if _in_scope(c, tokens, set(family), start, end)]
    sessions = _sessions(workspace, calls, places, tokens)
    model_calls = [c for s in sessions for c in s.calls]
    unwritten = [u for s in sessions for u in s.unwritten]
    seen = {t for s in sessions for t in s.tokens}
    feature_of = {str(f["node"]): f for f in features}
    turn_rows = [_turn(store, t, table, feature_of, model_calls, seen, moment) | {
        "unwritten_messages": sum(1 for u in unwritten if u.turn == t.token)} for t in turns]
    out: dict[str, Any] = {
        "report": REPORT,
        "workspace": str(workspace),
        "stages": [_stage(store, name, run, turn_rows, calls, moment)
                   for (name, _), run in zip(stages, runs, strict=True) if run is not None],
        "driver": _driver(sessions, calls),
        "commands": _commands(calls, model_calls, table, bool(sessions), unwritten),
        "turns": turn_rows,
        "features": [_feature(f, turn_rows, calls, store, family) for f in features],
        "models": _models(model_calls, turn_rows, table),
        "errors": _errors(calls),
        "time": _time(store, runs, turn_rows, moment),
        "agent_logs": [s.to_json() for s in sessions],
        "unattributed": _sum([c for c in model_calls if c.turn is None], table)
        if sessions else None,
        "prices": {"version": table.version, "taken": AGENT_PRICES_TAKEN,
                   "models": {m: p.to_json() for m, p in sorted(table.prices.items())
                              if m in {c.model for c in model_calls}
                              or m in {(t.get("self_reported") or {}).get("model")
                                       for t in turn_rows}}},
        "definitions": dict(DEFINITIONS),
    }
    out["unpriced"] = sorted({m for row in out["models"] for m in row.get("unpriced", ())})
    out["totals"] = _totals(out, model_calls, table, bool(sessions)) | {
        "unwritten_messages": len(unwritten)}
    out["summary"] = summary(out)
    return out


def _family(store: Store, run_id: str) -> list[Any]:
    out, stack = [], [run_id]
    while stack:
        row = store.get_run(stack.pop())
        if row is None:
            continue
        out.append(row)
        stack.extend(c.run_id for c in store.child_runs(row.run_id))
    return out


def _in_scope(call: Mapping[str, Any], tokens: set[str], runs: set[str], start: str | None,
              end: str | None) -> bool:
    """A call names one of the runs or turns, or names none and came while they ran."""
    from rein.workers.driver.calls import concerns

    if concerns(call, tokens, runs):
        return True
    if call.get("token") or call.get("answered") or call.get("run") or start is None:
        return False
    at = str(call.get("at") or "")
    return _t(start) <= _t(at) and (end is None or _t(at) <= _t(end))


def _t(stamp: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(stamp)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def _seconds(start: str | None, end: str | None, now: dt.datetime) -> float | None:
    if not start:
        return None
    return round(max(0.0, ((_t(end) if end else now) - _t(start)).total_seconds()), 3)


# -- the agent's records ------------------------------------------------------------------


def _sessions(workspace: Path, calls: Sequence[Mapping[str, Any]], places: Iterable[Path],
              tokens: set[str]) -> list[Any]:
    """Every agent record that holds one of ``tokens``: where the calls' agents said their
    records are, where the agents keep them by default, and ``places``."""
    from rein.telemetry.agent_logs import candidates, default_places, read

    named: dict[str, set[str]] = {}
    where: list[Path] = [Path(p) for p in places]
    for c in calls:
        agent = c.get("agent")
        if isinstance(agent, Mapping) and agent.get("logs"):
            where.append(Path(str(agent["logs"])))
            named.setdefault(str(agent.get("name")), set()).add(str(agent.get("session")))
    where += default_places()
    unique = list(dict.fromkeys(p for p in where if p.exists()))
    found = []
    for agent, path in candidates(unique, workspace.resolve(), named):
        session = read(agent, path, tokens)
        if session.tokens:  # it drove these runs: it received one of their turns
            found.append(session)
    return found


def _sum(model_calls: Sequence[Any], table: Any) -> dict[str, Any]:
    """Tokens and cost of some model calls; the cost is ``None`` when a model has no
    price (named in ``unpriced``)."""
    out: dict[str, Any] = {"model_calls": len(model_calls), **dict.fromkeys(_TOKENS, 0),
                           "cost_usd": 0.0}
    unpriced: set[str] = set()
    for c in model_calls:
        for key in _TOKENS:
            out[key] += getattr(c, key)
        price = table.price(c.model)
        if price is None:
            unpriced.add(str(c.model))
        else:
            out["cost_usd"] += price.cost_of(
                input_tokens=c.input_tokens, output_tokens=c.output_tokens,
                cached_input_tokens=c.cached_input_tokens,
                cache_write_tokens=c.cache_write_tokens)
    out["cost_usd"] = None if unpriced else round(out["cost_usd"], 6)
    if unpriced:
        out["unpriced"] = sorted(unpriced)
    return out


def _reported(answer: Mapping[str, Any] | None, table: Any) -> dict[str, Any] | None:
    """What the agent reported of one turn, priced, or ``None``."""
    from rein.workers.driver.worker import reported_cost

    usage = (answer or {}).get("usage")
    if not isinstance(usage, Mapping):
        return None
    cost = reported_cost(usage, {m: p.to_json() for m, p in table.prices.items()})
    inputs, outputs = int(usage["input_tokens"]), int(usage["output_tokens"])
    return {"model": usage.get("model"), "source": usage.get("source"),
            "input_tokens": inputs, "cached_input_tokens": int(usage.get("cached_input_tokens")
                                                               or 0),
            "output_tokens": outputs, "total_tokens": inputs + outputs, "cost_usd": cost}


def _turn(store: Store, turn: Any, table: Any, feature_of: Mapping[str, Mapping[str, Any]],
          model_calls: Sequence[Any], seen: set[str], now: dt.datetime) -> dict[str, Any]:
    attributed = _sum([c for c in model_calls if c.turn == turn.token], table) \
        if turn.token in seen else None
    reported = _reported(turn.answer, table)
    best, source = (attributed, "attributed") if attributed is not None else \
        (reported, "self-reported") if reported is not None else (None, "unknown")
    ended = _attempt_end(store, turn)
    feature = feature_of.get(turn.node_key)
    return {"token": turn.token, "run": turn.run_id, "node": turn.node_key,
            "attempt": turn.attempt, "kind": turn.kind,
            "feature": None if feature is None else feature.get("id"),
            "status": turn.status.value, "instructed_at": turn.created_at,
            "answered_at": turn.answered_at,
            "agent_seconds": _seconds(turn.created_at, turn.answered_at, now),
            "verification_seconds": None if turn.answered_at is None or ended is None
            else _seconds(turn.answered_at, ended, now), "ended_at": ended,
            "usage": best, "usage_source": source, "attributed": attributed,
            "self_reported": reported}


def _attempt_end(store: Store, turn: Any) -> str | None:
    node = store.node(turn.run_id, turn.node_key)
    for attempt in (node.record.get("attempts") or []) if node is not None else []:
        if attempt.get("attempt") == turn.attempt and attempt.get("finished_at"):
            return str(attempt["finished_at"])
    return None


# -- the views ------------------------------------------------------------------------------


def _calls_of(calls: Sequence[Mapping[str, Any]], tokens: set[str]) -> list[Mapping[str, Any]]:
    """The calls about these turns: a submit by the envelope it answered, any other by the
    instruction it printed."""
    return [c for c in calls if (c.get("answered") or c.get("token")) in tokens]


def _error_counts(calls: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    from rein.workers.driver.calls import whose

    out: dict[str, dict[str, int]] = {"agent": {}, "rein": {}}
    for c in calls:
        code = c.get("code")
        if isinstance(code, str):
            side = out[whose(code)]
            side[code] = side.get(code, 0) + 1
    return out


def _commands(calls: Sequence[Mapping[str, Any]], model_calls: Sequence[Any], table: Any,
              read_logs: bool, unwritten: Sequence[Any] = ()) -> list[dict[str, Any]]:
    names = list(dict.fromkeys(str(c["command"]) for c in calls))
    names += [n for n in dict.fromkeys(str(m.command) for m in [*model_calls, *unwritten]
                                       if m.command) if n not in names]
    rows = []
    for name in names:
        mine = [c for c in calls if c["command"] == name]
        errors = _error_counts(mine)
        rows.append({
            "command": f"rein {name}", "invocations": len(mine),
            "by_agent": sum(1 for c in mine if c.get("agent")),
            "protocol_errors": sum(errors["agent"].values()),
            "rein_errors": sum(errors["rein"].values()), "errors": errors,
            "seconds": round(sum(float(c.get("seconds") or 0) for c in mine), 3),
            "usage": _sum([m for m in model_calls if m.command == name], table)
            if read_logs else None,
            "unwritten_messages": sum(1 for u in unwritten if u.command == name)})
    if read_logs:
        before = [m for m in model_calls if m.command is None]
        rows.append({"command": BEFORE, "invocations": 0, "by_agent": 0,
                     "protocol_errors": 0, "rein_errors": 0,
                     "errors": {"agent": {}, "rein": {}}, "seconds": 0.0,
                     "usage": _sum(before, table),
                     "unwritten_messages": sum(1 for u in unwritten if u.command is None)})
    return rows


def _add(parts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The sum of some turns' usage; ``None`` as soon as one is unknown."""
    if any(p is None for p in parts):
        return None
    out: dict[str, Any] = {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0,
                           "cost_usd": 0.0}
    for p in parts:
        assert p is not None
        for key in ("total_tokens", "input_tokens", "output_tokens"):
            out[key] += int(p.get(key) or 0)
        if out["cost_usd"] is not None:
            cost = p.get("cost_usd")
            out["cost_usd"] = None if cost is None else round(out["cost_usd"] + cost, 6)
    return out


def known_part(parts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What is known of a sum some of whose parts are unknown, labelled as such: the sum
    over the known parts (``turns`` of ``of``), its cost ``None`` when a known part's is."""
    known = [p for p in parts if p is not None]
    out = _add(known) or {}
    return {"turns": len(known), "of": len(parts), **out}


def _sources(rows: Sequence[Mapping[str, Any]]) -> str:
    found = {str(r["usage_source"]) for r in rows}
    return found.pop() if len(found) == 1 else "mixed" if found else "none"


def _feature(feature: Mapping[str, Any], turns: Sequence[Mapping[str, Any]],
             calls: Sequence[Mapping[str, Any]], store: Store,
             family: Mapping[str, str]) -> dict[str, Any]:
    mine = [t for t in turns if t["node"] == feature["node"]]
    theirs = _calls_of(calls, {str(t["token"]) for t in mine})
    errors = _error_counts(theirs)
    return {"id": feature.get("id"), "title": feature.get("title"), "node": feature["node"],
            # a plan `rein spec` published: the requirements the feature serves
            "serves": list(feature.get("serves") or ()),
            "status": feature.get("status"), "attempts": feature.get("attempts", len(mine)),
            "steps": len(theirs), "protocol_errors": sum(errors["agent"].values()),
            "rein_errors": sum(errors["rein"].values()),
            "agent_seconds": round(sum(t["agent_seconds"] or 0 for t in mine), 3),
            "verification_seconds": round(sum(t["verification_seconds"] or 0 for t in mine),
                                          3),
            "usage": _add([t["usage"] for t in mine]) if mine else None,
            "usage_source": _sources(mine)}


def _stage(store: Store, name: str, run: Any, turns: Sequence[Mapping[str, Any]],
           calls: Sequence[Mapping[str, Any]], now: dt.datetime) -> dict[str, Any]:
    members = {r.run_id for r in _family(store, run.run_id)}
    mine = [t for t in turns if t["run"] in members]
    theirs = [c for c in calls if c.get("run") in members
              or (c.get("answered") or c.get("token")) in {t["token"] for t in mine}]
    errors = _error_counts(theirs)
    return {"name": name, "run": run.run_id, "status": run.status.value,
            "turns": len(mine), "steps": len(theirs),
            "protocol_errors": sum(errors["agent"].values()),
            "rein_errors": sum(errors["rein"].values()),
            "wall_seconds": _seconds(run.started_at, run.finished_at, now),
            "usage": _add([t["usage"] for t in mine]) if mine else None,
            "usage_source": _sources(mine)}


def _models(model_calls: Sequence[Any], turns: Sequence[Mapping[str, Any]], table: Any
            ) -> list[dict[str, Any]]:
    """Per model: the model calls read from the agent's records (``attributed``), and the
    turns whose usage is what the agent reported of itself (``self-reported``: no count of
    model calls, no cache writes), a row for each model and source."""
    names = sorted({str(c.model) for c in model_calls})
    rows = [{"model": m, "source": "attributed", "turns": None,
             **_sum([c for c in model_calls if str(c.model) == m], table)} for m in names]
    reported = [t for t in turns if t["usage_source"] == "self-reported"]
    for name in sorted({str(t["usage"].get("model")) for t in reported}):
        mine = [t["usage"] for t in reported if str(t["usage"].get("model")) == name]
        row: dict[str, Any] = {
            "model": name, "source": "self-reported", "turns": len(mine),
            "model_calls": None, "cache_write_tokens": None, "reasoning_tokens": None,
            **{k: sum(int(u.get(k) or 0) for u in mine)
               for k in ("input_tokens", "cached_input_tokens", "output_tokens",
                         "total_tokens")},
            "cost_usd": None if any(u.get("cost_usd") is None for u in mine)
            else round(sum(float(u["cost_usd"]) for u in mine), 6)}
        if table.price(name) is None and row["cost_usd"] is None:
            row["unpriced"] = [name]
        rows.append(row)
    return rows


def _errors(calls: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    counts = _error_counts(calls)
    return {"agent": counts["agent"], "rein": counts["rein"],
            "agent_total": sum(counts["agent"].values()),
            "rein_total": sum(counts["rein"].values())}


def _time(store: Store, runs: Sequence[Any], turns: Sequence[Mapping[str, Any]],
          now: dt.datetime) -> dict[str, Any]:
    """The time split, run by run: each part is the union of its spans clipped to the run's
    own (an approval still pending after the run ended counts up to its end, never after),
    and an instant two parts share counts once, as the first of agent, person and
    verification (an approval left pending while the agent works is the agent's time)."""
    # Each run's members are found again here: two stages may share a name.
    totals = dict.fromkeys(("wall", "agent", "person", "verification"), 0.0)
    for root in runs:
        if root is None:
            continue
        span = (_t(root.started_at), _t(root.finished_at) if root.finished_at else now)
        members = {r.run_id for r in _family(store, root.run_id)}
        mine = [t for t in turns if t["run"] in members]
        asked = [a for run_id in members for a in store.approvals(run_id=run_id)]
        parts = {
            "agent": _spans([(t["instructed_at"], t["answered_at"]) for t in mine], span),
            "person": _spans([(a.created_at, a.answered_at) for a in asked], span),
            "verification": _spans([(t["answered_at"], t["ended_at"]) for t in mine
                                    if t["answered_at"] and t["ended_at"]], span)}
        taken: list[tuple[dt.datetime, dt.datetime]] = []
        for name in ("agent", "person", "verification"):
            own = _minus(parts[name], taken)
            totals[name] += _length(own)
            taken = _union([*taken, *own])
        totals["wall"] += max(0.0, (span[1] - span[0]).total_seconds())
    out = {f"{name}_seconds": round(value, 3) for name, value in totals.items()}
    return {**out,
            "other_seconds": round(max(0.0, totals["wall"] - totals["agent"]
                                       - totals["person"] - totals["verification"]), 3),
            "ongoing": any(r is not None and r.finished_at is None for r in runs)}


Span = tuple[dt.datetime, dt.datetime]


def _spans(pairs: Iterable[tuple[str | None, str | None]], within: Span) -> list[Span]:
    """Some (start, end or ongoing) stamps as spans inside ``within``, merged."""
    out = []
    for start, end in pairs:
        if not start:
            continue
        a, b = max(_t(start), within[0]), min(_t(end) if end else within[1], within[1])
        if a < b:
            out.append((a, b))
    return _union(out)


def _union(spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _minus(spans: Sequence[Span], taken: Sequence[Span]) -> list[Span]:
    """``spans`` without what ``taken`` covers (both merged and sorted)."""
    out = []
    for a, b in spans:
        for c, d in taken:
            if d <= a or c >= b:
                continue
            if c > a:
                out.append((a, c))
            a = max(a, d)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return out


def _length(spans: Iterable[Span]) -> float:
    return sum((b - a).total_seconds() for a, b in spans)


def _driver(sessions: Sequence[Any], calls: Sequence[Mapping[str, Any]]) -> str:
    names = {s.agent for s in sessions} or {
        str(c["agent"].get("name")) for c in calls if isinstance(c.get("agent"), Mapping)}
    return ", ".join(sorted(names)) if names else "unknown"


def _totals(report: Mapping[str, Any], model_calls: Sequence[Any], table: Any,
            read_logs: bool) -> dict[str, Any]:
    turns = report["turns"]
    in_turns = _add([t["usage"] for t in turns]) if turns else None
    everything = _sum(model_calls, table) if read_logs else None
    if everything is not None and any(t["usage_source"] != "attributed" for t in turns):
        everything = None  # some turn is not in the records read: the sum would be short
    steps = sum(int(c["invocations"]) for c in report["commands"])
    return {"steps": steps,
            "steps_by_agent": sum(int(c["by_agent"]) for c in report["commands"]),
            "protocol_errors": report["errors"]["agent_total"],
            "rein_errors": report["errors"]["rein_total"],
            "turns": len(turns), "usage_in_turns": in_turns,
            "usage": everything if read_logs else in_turns,
            # beside an unknown total, never in its place: what is known of it
            "usage_known": known_part([t["usage"] for t in turns]),
            "usage_source": _sources(turns) if turns else "none"}


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """One row of the GF-V2 table: driver, steps, protocol errors, duration, total tokens,
    attributed cost and cost per command."""
    totals = report["totals"]
    usage = totals.get("usage")
    cost = None if usage is None else usage.get("cost_usd")
    steps = int(totals["steps"])
    return {"driver": report["driver"], "steps": steps,
            "protocol_errors": totals["protocol_errors"], "rein_errors": totals["rein_errors"],
            "duration_seconds": report["time"]["wall_seconds"],
            "total_tokens": None if usage is None else usage.get("total_tokens"),
            "cost_usd": cost, "usage_source": totals["usage_source"],
            "cost_per_command_usd": None if cost is None or not steps
            else round(cost / steps, 6)}


def record_attribution(store: Store, report: Mapping[str, Any], at: str) -> int:
    """Put on each turn's run what the agent's records say the turn cost (a
    ``usage/attributed`` event), where it is new or changed: a run's budgets and totals
    count it from then on, over what the agent reported of itself. How many were put."""
    from rein.core.ids import RunId
    from rein.engine.events import EventType, append
    from rein.engine.run.record import attributed_usage

    known: dict[str, dict[str, dict[str, Any]]] = {}
    put = 0
    for turn in report["turns"]:
        attributed = turn.get("attributed")
        if attributed is None:
            continue
        usage = {k: attributed.get(k) for k in ("input_tokens", "cached_input_tokens",
                                                 "cache_write_tokens", "output_tokens",
                                                 "total_tokens", "cost_usd", "model_calls")}
        run = str(turn["run"])
        if run not in known:
            known[run] = attributed_usage(store, run)
        before = known[run].get(str(turn["token"]))
        if before is not None and all(before.get(k) == v for k, v in usage.items()):
            continue
        append(store, RunId(run), EventType.USAGE_ATTRIBUTED,
               {"token": turn["token"], "node": turn["node"], "attempt": turn["attempt"],
                "usage": usage, "prices": report["prices"]["version"]}, at)
        put += 1
    return put


def configured(config: Any) -> tuple[list[Path], Mapping[str, Any] | None]:
    """``[usage] agent_logs`` (more places to read) and ``[usage] prices`` of rein.toml
    (``config``: the merged configuration, or anything with its ``get``)."""
    usage = config.get("usage")
    section: Mapping[str, Any] = usage if isinstance(usage, Mapping) else {}
    places = [Path(str(p)).expanduser() for p in section.get("agent_logs") or ()]
    prices = section.get("prices")
    return places, prices if isinstance(prices, Mapping) else None


def for_runs(harness: Any, run_ids: Sequence[str], places: Iterable[Path] = ()
             ) -> dict[str, Any]:
    """The report of some runs of a Harness (each counted with its child runs)."""
    configured_places, prices = configured(harness.config)
    stages = [("run", harness.top_run_id(r)) for r in run_ids]
    return build(harness.store, harness.workspace, stages, places=[*places,
                                                                    *configured_places],
                 prices=prices)


__all__ = ["BEFORE", "DEFINITIONS", "REPORT", "build", "configured", "for_runs", "known_part",
           "record_attribution", "summary"]
