"""The usage report (:mod:`rein.engine.cases.usage_report`) as text for a person.

Every figure nobody measured reads ``unknown``; a usage the agent reported of itself is
marked ``self-reported``, one read from its own records ``attributed``; each time says
which of the report's definitions it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

UNKNOWN = "unknown"


def tokens(value: Any) -> str:
    return UNKNOWN if value is None else f"{int(value):,}"


def cost(value: Any) -> str:
    return UNKNOWN if value is None else f"${float(value):.4f}"


def seconds(value: Any) -> str:
    if value is None:
        return UNKNOWN
    value = float(value)
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    return f"{minutes} min {secs:02d} s" if minutes < 60 else \
        f"{minutes // 60} h {minutes % 60:02d} min"


TIME_WIDTH = 11  # "59 min 59 s": a table's time column keeps its width whatever it shows


def cell_seconds(value: Any) -> str:
    """A time in a table's cell, at the width every time there takes."""
    return seconds(value).rjust(TIME_WIDTH)


def _usage_cells(usage: Mapping[str, Any] | None) -> list[str]:
    if usage is None:
        return [UNKNOWN] * 4
    return [tokens(usage.get("input_tokens")), tokens(usage.get("output_tokens")),
            tokens(usage.get("total_tokens")), cost(usage.get("cost_usd"))]


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(cells, widths, strict=True)))

    return [line(head), *(line(r) for r in rows)]


def gf_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The GF-V2 table: one row per driver."""
    head = ("driver", "steps", "protocol errors", "rein errors", "duration (wall)",
            "total tokens", "cost", "cost per command", "usage")
    return _table(head, [[str(r["driver"]), str(r["steps"]), str(r["protocol_errors"]),
                          str(r["rein_errors"]), cell_seconds(r["duration_seconds"]),
                          tokens(r["total_tokens"]), cost(r["cost_usd"]),
                          cost(r["cost_per_command_usd"]), str(r["usage_source"])]
                         for r in rows])


def render(report: Mapping[str, Any], title: str = "USAGE REPORT") -> str:
    out = [f"{title} (driver: {report['driver']}; prices: {report['prices']['version']})",
           "runs: " + ", ".join(f"{s['name']} {s['run']} ({s['status']})"
                                for s in report["stages"]), ""]
    out += gf_table([report["summary"]])
    out += ["", ("commands (steps: every invocation rein recorded; tokens and cost: the model "
            "calls that followed its output, from the agent's records)")]
    out += _table(("command", "steps", "by agent", "agent errors", "rein errors",
                   "rein time", "model calls", "input", "output", "total", "cost"),
                  [[_verb(c["command"]), str(c["invocations"]), str(c["by_agent"]),
                    str(c["protocol_errors"]), str(c["rein_errors"]), cell_seconds(c["seconds"]),
                    UNKNOWN if c["usage"] is None else str(c["usage"]["model_calls"]),
                    *_usage_cells(c["usage"])] for c in report["commands"]])
    if report["stages"]:
        out += ["", "stages"]
        out += _table(("stage", "run", "steps", "agent errors", "wall", "total tokens", "cost",
                       "usage"),
                      [[s["name"], s["run"], str(s["steps"]), str(s["protocol_errors"]),
                        cell_seconds(s["wall_seconds"]), *_usage_cells(s["usage"])[2:],
                        s["usage_source"]] for s in report["stages"]], left=2)
    if report["features"]:
        out += ["", "features (steps: the calls about its turns; attempts: rein's)"]
        out += _table(("feature", "status", "attempts", "steps", "agent errors", "agent",
                       "verification", "total tokens", "cost", "usage"),
                      [[f"{f['id']}", str(f["status"]), str(f["attempts"]), str(f["steps"]),
                        str(f["protocol_errors"]), cell_seconds(f["agent_seconds"]),
                        cell_seconds(f["verification_seconds"]), *_usage_cells(f["usage"])[2:],
                        f["usage_source"]] for f in report["features"]], left=2)
        served = [f"  {f['id']}: {', '.join(f['serves'])}" for f in report["features"]
                  if f.get("serves")]
        if served:  # a plan `rein spec` published: each feature links back to its requirements
            out += ["", "requirements served:", *served]
    if report["turns"]:
        out += ["", "turns"]
        out += _table(("turn", "node", "attempt", "agent", "verification", "total tokens",
                       "cost", "usage"),
                      [[t["token"], t["node"], str(t["attempt"]), cell_seconds(t["agent_seconds"]),
                        cell_seconds(t["verification_seconds"]), *_usage_cells(t["usage"])[2:],
                        t["usage_source"]] for t in report["turns"]], left=2)
    if report["models"]:
        out += ["", ("models (attributed: the model calls of the agent's records; "
                     "self-reported: the turns whose usage the agent reported)")]
        out += _table(("model", "source", "calls", "turns", "input", "cached", "cache write",
                       "output", "total", "cost"),
                      [[m["model"], m["source"], _count_or(m["model_calls"]),
                        _count_or(m["turns"]), tokens(m["input_tokens"]),
                        tokens(m["cached_input_tokens"]), tokens(m["cache_write_tokens"]),
                        tokens(m["output_tokens"]), tokens(m["total_tokens"]),
                        cost(m["cost_usd"])] for m in report["models"]], left=2)
    out += ["", "time (one definition each)"]
    time = report["time"]
    for name in ("wall", "agent", "person", "verification", "other"):
        out.append(f"  {name:<13}{seconds(time[f'{name}_seconds']):>12}  "
                   f"{report['definitions'][name]}")
    if time.get("ongoing"):
        out.append("  (a run is still going: its times run to now)")
    out += ["", _errors_line(report["errors"])]
    out += _totals_lines(report)
    out += _sources_lines(report)
    return "\n".join(out) + "\n"


def _count_or(value: Any) -> str:
    return "-" if value is None else str(value)


def _verb(command: str) -> str:
    """``rein submit`` as ``submit``: the table's column says which rein command."""
    return command.removeprefix("rein ")


def _errors_line(errors: Mapping[str, Any]) -> str:
    def listed(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{k} ×{v}" for k, v in sorted(counts.items())) or "none"

    return (f"protocol errors: the agent's {errors['agent_total']} ({listed(errors['agent'])});"
            f" rein's own {errors['rein_total']} ({listed(errors['rein'])})")


def _totals_lines(report: Mapping[str, Any]) -> list[str]:
    t = report["totals"]
    usage = t["usage"]
    out = [(f"total: {t['steps']} steps ({t['steps_by_agent']} by the agent), "
           f"{t['turns']} turns, {tokens(None if usage is None else usage['total_tokens'])} "
           f"tokens, {cost(None if usage is None else usage.get('cost_usd'))} "
           f"({t['usage_source']})")]
    if report.get("unattributed") is not None:
        u = report["unattributed"]
        out.append(f"unattributed (before the agent received any turn of these runs): "
                   f"{u['model_calls']} model calls, {tokens(u['total_tokens'])} tokens, "
                   f"{cost(u['cost_usd'])}")
    known = t.get("usage_known") or {}
    if usage is None and known.get("turns"):
        out.append(f"known part: {tokens(known['total_tokens'])} tokens, "
                   f"{cost(known.get('cost_usd'))}, over {known['turns']} of {known['of']} "
                   "turns (the total is unknown: the other turns' usage is)")
    out += _unwritten_lines(report)
    out += [no_price(m) for m in report.get("unpriced", ())]
    earlier = report.get("earlier_plans")
    if earlier:
        u, known = earlier["usage"], earlier["usage_known"]
        shown = (f"{tokens(u['total_tokens'])} tokens, {cost(u.get('cost_usd'))}"
                 if u is not None else
                 f"unknown tokens (known part: {tokens(known.get('total_tokens', 0))} tokens, "
                 f"{cost(known.get('cost_usd', 0.0))}, over {known['turns']} of "
                 f"{known['of']} turns)")
        out.append(f"earlier plans (not in the figures above): {len(earlier['runs'])} runs, "
                   f"{earlier['turns']} turns, {shown} ({earlier['usage_source']}); "
                   f"`rein runs report {' '.join(earlier['runs'])}` for their detail")
    return out


def no_price(model: str) -> str:
    """The note for a model the price table lacks: which, and how to give its price."""
    return (f"no price for {model}: its cost is unknown (give one in rein.toml under "
            f'[usage.prices."{model}"]: input, output, cache_read in USD per million tokens)')


def _unwritten_lines(report: Mapping[str, Any]) -> list[str]:
    """The messages the agent's records name but do not hold, and where they belong."""
    count = int(report["totals"].get("unwritten_messages") or 0)
    if not count:
        return []
    where = [str(c["command"]) for c in report["commands"] if c.get("unwritten_messages")]
    where += [f"turn {t['token']}" for t in report["turns"] if t.get("unwritten_messages")]
    it, its = ("it", "its") if count == 1 else ("them", "their")
    return [(f"unwritten: the agent's records name {_count(count, 'message')} they do not "
             f"hold (the agent exited before writing {it}): {its} tokens are in no figure "
             f"above, and these are short by {it}: {'; '.join(where)}")]


def _sources_lines(report: Mapping[str, Any]) -> list[str]:
    logs = report["agent_logs"]
    if not logs:
        return [("agent records: none found holding these runs' turns; tokens and cost are "
                "what the agent reported (self-reported) or unknown (pass --agent-logs PATH)")]
    return ["agent records read:"] + [f"  {s['agent']} session {s['session']}: "
                                      f"{_count(s['model_calls'], 'model call')}, "
                                      f"{_count(s['turns_seen'], 'turn')} seen"
                                      + (f", {s['unwritten_messages']} unwritten"
                                         if s.get("unwritten_messages") else "")
                                      + f" ({s['file']})" for s in logs]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def render_compared(compared: Mapping[str, Any]) -> str:
    rows = compared["compared"]
    out = ["USAGE SIDE BY SIDE", ""]
    out += gf_table(rows)
    out += [""] + [f"  {r['driver']}: {r['workspace']} ({', '.join(r['stages'])})"
                   for r in rows]
    return "\n".join(out) + "\n"


__all__ = ["cost", "gf_table", "no_price", "render", "render_compared", "seconds",
           "tokens"]
