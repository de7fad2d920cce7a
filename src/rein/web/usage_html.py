"""The usage report (:mod:`rein.engine.cases.usage_report`) as HTML: one self-contained file (no
script, no font, no file beside it) or the body of the console's report page.

Every value shown is escaped; what nobody measured reads ``unknown``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from rein.web.states import badge

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;
max-width:1200px;padding:0 1rem;color:#111827;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #d1d5db;
padding:.3rem .6rem;text-align:left;vertical-align:top}th{background:#f3f4f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}.unknown{color:#b45309}
.muted{color:#6b7280}code{font:12px ui-monospace,monospace}
"""
UNKNOWN = "<span class='unknown'>unknown</span>"


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _tokens(value: Any) -> str:
    return UNKNOWN if value is None else f"{int(value):,}"


def _cost(value: Any) -> str:
    return UNKNOWN if value is None else f"${float(value):.4f}"


def _secs(value: Any) -> str:
    return UNKNOWN if value is None else f"{float(value):.1f} s"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, numeric_from: int = 1,
           attr: str = "") -> str:
    th = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f"<td class='num'>{c}</td>" if i >= numeric_from else f"<td>{c}</td>"
        for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table{attr}><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _usage(u: Mapping[str, Any] | None) -> list[str]:
    if u is None:
        return [UNKNOWN, UNKNOWN]
    return [_tokens(u.get("total_tokens")), _cost(u.get("cost_usd"))]


def gf_table(rows: Sequence[Mapping[str, Any]]) -> str:
    return _table(("Driver", "Steps", "Protocol errors", "rein errors", "Duration (wall)",
                   "Total tokens", "Cost", "Cost per command", "Usage"),
                  [[_e(r["driver"]), _e(r["steps"]), _e(r["protocol_errors"]),
                    _e(r["rein_errors"]), _secs(r["duration_seconds"]),
                    _tokens(r["total_tokens"]), _cost(r["cost_usd"]),
                    _cost(r["cost_per_command_usd"]), _e(r["usage_source"])] for r in rows],
                  attr=" data-gf-table")


def body(report: Mapping[str, Any]) -> str:
    """The report's content, for a page of its own or the console's."""
    parts = [f"<h1>What the agent spent: {_e(report['driver'])}</h1>",
             "<p class='muted'>Runs: " + ", ".join(
                 f"{_e(s['name'])} <code>{_e(s['run'])}</code> {badge(s['status'])}"
                 for s in report["stages"]) + f". Prices: {_e(report['prices']['version'])}.</p>",
             gf_table([report["summary"]]),
             ("<h2>Commands</h2><p class='muted'>Steps: every invocation rein recorded. Tokens "
             "and cost: the model calls that followed the command's output, from the agent's "
             "own records.</p>"),
             _table(("Command", "Steps", "By the agent", "Agent errors", "rein errors",
                     "Model calls", "Total tokens", "Cost"),
                    [[_e(c["command"]), _e(c["invocations"]), _e(c["by_agent"]),
                      _e(c["protocol_errors"]), _e(c["rein_errors"]),
                      UNKNOWN if c["usage"] is None else _e(c["usage"]["model_calls"]),
                      *_usage(c["usage"])] for c in report["commands"]],
                    attr=" data-commands")]
    if report["features"]:
        parts += ["<h2>Features</h2>", _table(
            ("Feature", "Status", "Attempts", "Steps", "Agent errors", "Agent time",
             "Verification", "Total tokens", "Cost", "Usage"),
            [[f"<code>{_e(f['id'])}</code> {_e(f['title'])}", badge(f["status"]),
              _e(f["attempts"]), _e(f["steps"]), _e(f["protocol_errors"]),
              _secs(f["agent_seconds"]), _secs(f["verification_seconds"]),
              *_usage(f["usage"]), _e(f["usage_source"])] for f in report["features"]],
            numeric_from=2)]
    if report["turns"]:
        parts += ["<h2>Turns</h2>", _table(
            ("Turn", "Node", "Attempt", "Agent time", "Verification", "Total tokens", "Cost",
             "Usage"),
            [[f"<code>{_e(t['token'])}</code>", _e(t["node"]), _e(t["attempt"]),
              _secs(t["agent_seconds"]), _secs(t["verification_seconds"]), *_usage(t["usage"]),
              _e(t["usage_source"])] for t in report["turns"]], numeric_from=2)]
    if report["models"]:
        parts += [("<h2>Models</h2><p class='muted'>Attributed: the model calls of the "
                   "agent's records. Self-reported: the turns whose usage the agent "
                   "reported.</p>"),
                  _table(
            ("Model", "Source", "Calls", "Turns", "Input", "Cached", "Cache write", "Output",
             "Total", "Cost"),
            [[_e(m["model"]), _e(m["source"]), _e(_dash(m["model_calls"])),
              _e(_dash(m["turns"])), _tokens(m["input_tokens"]),
              _tokens(m["cached_input_tokens"]), _tokens(m["cache_write_tokens"]),
              _tokens(m["output_tokens"]), _tokens(m["total_tokens"]), _cost(m["cost_usd"])]
             for m in report["models"]], numeric_from=2)]
    parts += _notes(report)
    time = report["time"]
    parts += ["<h2>Time</h2>", _table(
        ("Time", "Seconds", "Definition"),
        [[_e(name), _secs(time[f"{name}_seconds"]), _e(report["definitions"][name])]
         for name in ("wall", "agent", "person", "verification", "other")], numeric_from=1)]
    errors = report["errors"]
    parts += ["<h2>Protocol errors</h2>", _table(
        ("Whose", "Code", "Count"),
        [[side, f"<code>{_e(code)}</code>", _e(n)] for side in ("agent", "rein")
         for code, n in sorted(errors[side].items())] or [["none", "", "0"]], numeric_from=2)]
    logs = report["agent_logs"]
    parts.append("<h2>Agent records read</h2>" + (
        "<ul>" + "".join(f"<li>{_e(s['agent'])} session <code>{_e(s['session'])}</code>: "
                         f"{_e(s['model_calls'])} model calls"
                         + (f", <span data-unwritten>{_e(s['unwritten_messages'])} "
                            f"{'message' if s['unwritten_messages'] == 1 else 'messages'} "
                            "named but not written (the agent exited first): in no figure"
                            "</span>" if s.get("unwritten_messages") else "")
                         + "</li>" for s in logs) + "</ul>"
        if logs else "<p>None found holding these runs' turns: tokens and cost are what the "
                     "agent reported (self-reported) or unknown.</p>"))
    return "\n".join(parts) + "\n"


def _dash(value: Any) -> Any:
    return "-" if value is None else value


def _notes(report: Mapping[str, Any]) -> list[str]:
    """The known part beside an unknown total, and each model without a price."""
    out = []
    totals = report["totals"]
    known = totals.get("usage_known") or {}
    if totals["usage"] is None and known.get("turns"):
        out.append(f"<p data-known-part>Known part: {_tokens(known['total_tokens'])} tokens, "
                   f"{_cost(known.get('cost_usd'))}, over {_e(known['turns'])} of "
                   f"{_e(known['of'])} turns (the total is unknown: the other turns' usage "
                   "is).</p>")
    out += [f"<p data-unpriced>No price for <code>{_e(m)}</code>: its cost is unknown (give "
            f"one in rein.toml under <code>[usage.prices.&quot;{_e(m)}&quot;]</code>: input, "
            "output, cache_read in USD per million tokens).</p>"
            for m in report.get("unpriced", ())]
    earlier = report.get("earlier_plans")
    if earlier:
        u = earlier["usage"]
        out.append(f"<p data-earlier-plans>Earlier plans (not in the figures above): "
                   f"{len(earlier['runs'])} runs, {_e(earlier['turns'])} turns, "
                   f"{_usage(u)[0]} tokens, {_usage(u)[1]} "
                   f"({_e(earlier['usage_source'])}): "
                   + ", ".join(f"<code>{_e(r)}</code>" for r in earlier["runs"]) + ".</p>")
    return out


def compared_body(compared: Mapping[str, Any]) -> str:
    return "<h1>Side by side</h1>" + gf_table(compared["compared"])


def html_report(report: Mapping[str, Any]) -> str:
    """The whole page, its style inline; ``report`` may be a side-by-side comparison."""
    inner = compared_body(report) if "compared" in report else body(report)
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>rein usage report</title>"
            f"<style>{_STYLE}</style></head><body>\n{inner}</body></html>\n")


__all__ = ["body", "compared_body", "gf_table", "html_report"]
