"""The results as one self-contained HTML page: no script, no font, no file beside it.

The chart is inline SVG: one bar per configuration (its solve rate) with its 95% Wilson
interval drawn as a whisker. Tables follow: scenarios by configuration, the comparisons with
their exact p-values, the suite's validation, risk flags and failures by criterion. Every
value shown is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from rein.eval.render import shown_sum

_STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;
max-width:1100px;padding:0 1rem;color:#111827;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #d1d5db;
padding:.3rem .6rem;text-align:left;vertical-align:top}th{background:#f3f4f6}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.solved{background:#dcfce7}.failed{background:#fee2e2}.flaky{background:#fef9c3}
.none{color:#6b7280}.bad{color:#b91c1c;font-weight:600}.ok{color:#15803d;font-weight:600}
code,pre{font:12px ui-monospace,monospace}pre{white-space:pre-wrap;margin:0}
"""


def html_report(result: Mapping[str, Any]) -> str:
    """The whole page, its style inline."""
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rein eval {escape(str(result['evaluation']))}</title>"
            f"<style>{_STYLE}</style></head><body>\n{body(result)}</body></html>\n")


def body(result: Mapping[str, Any]) -> str:
    """The report's content, for a page of its own or the web console's."""
    configs = result["configurations"]
    parts = [
        f"<h1>Evaluation {escape(str(result['evaluation']))}</h1>",
        (f"<p>{len(result['scenarios'])} scenario(s), {result['trials_per_scenario']} "
         f"trial(s) per scenario and configuration; significance level "
         f"{result['alpha']}.</p>"),
        "<h2>Solve rate</h2>", chart(configs), _configurations(configs),
        "<h2>Scenarios</h2>", _scenarios(result["scenarios"], [c["name"] for c in configs]),
    ]
    if result.get("comparisons"):
        parts += ["<h2>Comparisons</h2>", _comparisons(result["comparisons"])]
    if result.get("baseline"):
        b = result["baseline"]
        verdict = "<span class=ok>passed</span>" if b["passed"] else \
            "<span class=bad>failed</span>"
        parts += [f"<h2>Baseline {escape(str(b.get('evaluation')))}: {verdict}</h2>",
                  _comparisons(b["comparisons"])]
    parts += [_validation(result.get("validation") or {}), _risk(result.get("risk") or {}),
              _failures(configs)]
    return "\n".join(p for p in parts if p) + "\n"


def chart(configs: Sequence[Mapping[str, Any]]) -> str:
    """An SVG bar chart of the solve rates with their confidence intervals."""
    bar, gap, left, top, height = 36, 18, 190, 16, 0
    width = 420
    rows = []
    for i, c in enumerate(configs):
        y = top + i * (bar + gap)
        w = width * float(c["solve_rate"])
        lo, hi = left + width * float(c["ci_low"]), left + width * float(c["ci_high"])
        mid = y + bar / 2
        label = escape(str(c["name"]))
        rows.append(
            f'<text x="{left - 8}" y="{mid + 4:.1f}" text-anchor="end">{label}</text>'
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar}" fill="#60a5fa">'
            f'<title>{label}: {c["solved"]}/{c["trials"]}</title></rect>'
            f'<line x1="{lo:.1f}" x2="{hi:.1f}" y1="{mid:.1f}" y2="{mid:.1f}" '
            f'stroke="#111827" stroke-width="2"/>'
            f'<line x1="{lo:.1f}" x2="{lo:.1f}" y1="{mid - 7:.1f}" y2="{mid + 7:.1f}" '
            f'stroke="#111827" stroke-width="2"/>'
            f'<line x1="{hi:.1f}" x2="{hi:.1f}" y1="{mid - 7:.1f}" y2="{mid + 7:.1f}" '
            f'stroke="#111827" stroke-width="2"/>'
            f'<text x="{left + width + 10}" y="{mid + 4:.1f}">'
            f'{float(c["solve_rate"]):.0%} ({c["solved"]}/{c["trials"]})</text>')
        height = y + bar
    axis = "".join(
        f'<line x1="{left + width * t}" x2="{left + width * t}" y1="{top - 6}" '
        f'y2="{height + 4}" stroke="#e5e7eb"/><text x="{left + width * t}" '
        f'y="{height + 18}" text-anchor="middle" font-size="11">{t:.0%}</text>'
        for t in (0, 0.25, 0.5, 0.75, 1))
    total = height + 28
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{left + width + 120}" '
            f'height="{total}" font-size="13" aria-label="solve rate per configuration, '
            f'with 95% Wilson intervals">{axis}{"".join(rows)}</svg>')


def _configurations(configs: Sequence[Mapping[str, Any]]) -> str:
    head = ("<table><tr><th>configuration</th><th>worker</th><th>solved</th><th>rate</th>"
            "<th>95% CI</th><th>pass@k · pass^k</th><th>tokens</th><th>cost $</th><th>turns</th><th>wall s</th>"
            "<th>digest</th></tr>")
    rows = []
    for c in configs:
        worker = escape(str(c["worker"])) + (" (test double)" if c.get("test_double") else "")
        cost = shown_sum(c["cost_usd"], c.get("cost_complete", True), "{:.4f}")
        tokens = shown_sum(c["tokens"], c.get("tokens_complete", True), "{}")
        rows.append(f"<tr><td>{escape(str(c['name']))}</td><td>{worker}</td>"
                    f"<td class=num>{c['solved']}/{c['trials']}</td>"
                    f"<td class=num>{c['solve_rate']:.0%}</td>"
                    f"<td class=num>{c['ci_low']:.0%} – {c['ci_high']:.0%}</td>"
                    f"<td class=num>{_passes(c)}</td>"
                    f"<td class=num>{tokens}</td><td class=num>{cost}</td>"
                    f"<td class=num>{c['turns']}</td><td class=num>{c['wall_seconds']:.1f}</td>"
                    f"<td><code>{escape(str(c['digest'])[:19])}…</code></td></tr>")
    return head + "".join(rows) + "</table>"


def _passes(c: Mapping[str, Any]) -> str:
    """pass@k and pass^k at the largest k (a result written before them: "-")."""
    at, hat = c.get("pass_at_k") or {}, c.get("pass_hat_k") or {}
    if not at:
        return "-"
    k = list(at)[-1]
    return f"@{k} {at[k]:.0%} · ^{k} {hat[k]:.0%}"


def _scenarios(scenarios: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    head = "<table><tr><th>scenario</th><th>kind</th>" + "".join(
        f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    rows = []
    for s in scenarios:
        cells = []
        for n in names:
            r = s["results"][n]
            text = f"{r['solved']}/{r['trials']}" if r["trials"] else \
                escape("/".join(r.get("not_graded", ["-"])))
            cells.append(f"<td class=\"num {escape(r['state'])}\">{text}</td>")
        rows.append(f"<tr><td>{escape(str(s['name']))}</td><td>{escape(str(s['kind']))}</td>"
                    + "".join(cells) + "</tr>")
    return head + "".join(rows) + "</table>"


def _comparisons(comparisons: Sequence[Mapping[str, Any]]) -> str:
    head = ("<table><tr><th>candidate vs baseline</th><th>verdict</th><th>p</th>"
            "<th>mean difference</th><th>fixed</th><th>broken</th><th>flaky</th></tr>")
    rows = [f"<tr><td>{escape(str(c['candidate']))} vs {escape(str(c['baseline']))}</td>"
            f"<td>{escape(str(c['verdict']))}</td><td class=num>{c['p_value']:.4g}</td>"
            f"<td class=num>{c['difference']:+.2f}</td>"
            + "".join(f"<td>{escape(', '.join(c[k]))}</td>" for k in ("fixed", "broken",
                                                                       "flaky"))
            + "</tr>" for c in comparisons]
    method = escape(str(comparisons[0]["method"])) if comparisons else ""
    return head + "".join(rows) + f"</table><p><small>{method}</small></p>"


def _validation(validation: Mapping[str, Any]) -> str:
    items = []
    if "oracle" in validation:
        v = validation["oracle"]
        items.append("<li>oracle: " + ("<span class=ok>solves every scenario with a "
                                       "solution</span>" if v["ok"] else
                                       "<span class=bad>does not solve "
                                       f"{escape(', '.join(v['not_solved']))}</span>")
                     + (f"; no solution: {escape(', '.join(v['no_solution']))}"
                        if v["no_solution"] else "") + "</li>")
    if "nop" in validation:
        v = validation["nop"]
        items.append("<li>nop: " + ("<span class=ok>solves nothing</span>" if v["ok"] else
                                    "<span class=bad>solves "
                                    f"{escape(', '.join(v['solved']))}</span>") + "</li>")
    return f"<h2>Validation</h2><ul>{''.join(items)}</ul>" if items else ""


def _risk(risk: Mapping[str, Any]) -> str:
    changes, hooks = risk.get("changes") or [], risk.get("hooks") or []
    if not changes and not hooks:
        return ""
    rows = [f"<tr><td>{escape(c['change'])}</td><td>{escape(', '.join(c['areas']))}</td>"
            f"<td>{escape(', '.join(c['fixed']))}</td><td>{escape(', '.join(c['broken']))}"
            "</td></tr>" for c in changes]
    out = ("<h2>Risk of each change</h2><table><tr><th>change</th><th>areas</th>"
           "<th>fixed</th><th>broke</th></tr>" + "".join(rows) + "</table>")
    if hooks:
        out += "<ul>" + "".join(f"<li class=bad>{escape(h['message'])}</li>" for h in hooks) \
            + "</ul>"
    return out


def _failures(configs: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in configs:
        for f in c["failures"]:
            evidence = "".join(f"<pre>{escape(e)}</pre>" for e in f["evidence"][:2])
            rows.append(f"<tr><td>{escape(str(c['name']))}</td>"
                        f"<td>{escape(str(f['criterion']))}"
                        + (f" at {escape(', '.join(f['nodes']))}" if f.get("nodes") else "")
                        + f"</td><td class=num>{f['trials']}</td>"
                        f"<td>{escape(', '.join(f['scenarios']))}</td><td>{evidence}</td></tr>")
    if not rows:
        return ""
    return ("<h2>Failures, by failing criterion</h2><table><tr><th>configuration</th>"
            "<th>criterion</th><th>trials</th><th>scenarios</th><th>evidence</th></tr>"
            + "".join(rows) + "</table>")


__all__ = ["body", "chart", "html_report"]
