"""The results as text, for a person at a terminal (``rein eval`` without ``--json``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rein.eval.results import discordant_needed


def render(result: Mapping[str, Any]) -> str:
    lines = [(f"EVALUATION {result['evaluation']} · {len(result['scenarios'])} scenario(s) · "
              f"{result['trials_per_scenario']} trial(s) each"), ""]
    lines.append(f"{'configuration':<24} {'solved':>9} {'rate':>6} {'95% CI':>15} "
                 f"{'tokens':>9} {'cost $':>8} {'turns':>6} {'wall s':>8}")
    partial = False
    for c in result["configurations"]:
        cost = shown_sum(c["cost_usd"], c.get("cost_complete", True), "{:.4f}")
        tokens = shown_sum(c["tokens"], c.get("tokens_complete", True), "{}")
        partial = partial or cost.endswith("+") or tokens.endswith("+")
        lines.append(f"{_name(c):<24} {c['solved']:>4}/{c['trials']:<4} "
                     f"{c['solve_rate']:>6.0%} {_ci(c):>15} {tokens:>9} {cost:>8} "
                     f"{c['turns']:>6} {c['wall_seconds']:>8.1f}")
        if len(c.get("pass_at_k") or {}) > 1:
            lines.append("    pass@k " + _ks(c["pass_at_k"]) + "   pass^k "
                         + _ks(c["pass_hat_k"]))
        for status, trials in sorted(c["not_graded"].items()):
            lines.append(f"    not graded ({status}): {len(trials)} trial(s)")
        unused = (c.get("overlays") or {}).get("never_offered")
        if unused:
            lines.append(f"    tool description(s) never shown: {', '.join(unused)} (no "
                         "model call of its trials offered them)")
    if partial:
        lines.append("  (+: a sum over the trials that reported it; others did not)")
    doubles = [c["name"] for c in result["configurations"] if c.get("test_double")]
    if doubles:
        lines.append(f"  ({', '.join(doubles)}: the scripted provider, a test double)")
    lines += ["", "scenarios:"]
    names = [c["name"] for c in result["configurations"]]
    for s in result["scenarios"]:
        cells = []
        for name in names:
            r = s["results"][name]
            cells.append(f"{name} {r['solved']}/{r['trials']}" if r["trials"]
                         else f"{name} {'/'.join(r.get('not_graded', ['-']))}")
        lines.append(f"  {s['name']:<28} " + "  ".join(cells))
    for comp in result["comparisons"]:
        lines += ["", _comparison(comp, result.get("alpha"))]
    validation = result.get("validation") or {}
    if "oracle" in validation or "nop" in validation:
        lines += ["", "validation:"]
        if "oracle" in validation:
            v = validation["oracle"]
            lines.append("  oracle " + ("solves every scenario with a solution" if v["ok"]
                                        else f"does NOT solve {', '.join(v['not_solved'])}"))
            if v["no_solution"]:
                lines.append(f"    no reference solution: {', '.join(v['no_solution'])}")
            if v["unsupported"]:
                lines.append(f"    unsupported here: {', '.join(v['unsupported'])}")
        if "nop" in validation:
            v = validation["nop"]
            lines.append("  nop " + ("solves nothing" if v["ok"] else
                                     f"SOLVES {', '.join(v['solved'])}: those scenarios check "
                                     "nothing an agent must do"))
    risk = result.get("risk") or {}
    flags, changes = risk.get("hooks") or [], risk.get("changes") or []
    if flags or changes:
        lines += ["", "risk of each change:"]
        for c in changes:
            lines.append(f"  {c['change']} ({', '.join(c['areas']) or 'no change'}): fixed "
                         f"{len(c['fixed'])}, broke {len(c['broken'])}"
                         + (f", flaky {len(c['flaky'])}" if c["flaky"] else ""))
        lines += [f"  flag: {f['message']}" for f in flags]
    shown = [c for c in result["configurations"] if c["failures"]]
    if shown:
        lines += ["", "failures, by failing criterion:"]
        for c in shown:
            lines.append(f"  {c['name']}:")
            for f in c["failures"][:8]:
                where = f" at {', '.join(f['nodes'])}" if f.get("nodes") else ""
                lines.append(f"    {f['criterion']}{where}: {f['trials']} trial(s) in "
                             f"{', '.join(f['scenarios'])}")
                if f["evidence"]:
                    lines.append("      " + f["evidence"][0].strip().splitlines()[0][:140]
                                 if f["evidence"][0].strip() else "")
    baseline = result.get("baseline")
    if baseline:
        lines += ["", f"baseline {baseline.get('evaluation')}: "
                  + ("passed" if baseline["passed"] else "FAILED")]
        for c in baseline["comparisons"]:
            lines.append("  " + _comparison(c, result.get("alpha")))
            left = c.get("not_compared") or {}
            for key, said in (("not_run_now", "not run now, not compared"),
                              ("not_in_baseline", "not in the baseline, not compared"),
                              ("changed", "changed since the baseline ran")):
                if left.get(key):
                    lines.append(f"    {said}: {', '.join(left[key])}")
    return "\n".join(lines) + "\n"


def _name(c: Mapping[str, Any]) -> str:
    name = str(c["name"])
    return name if len(name) <= 24 else name[:23] + "…"


def shown_sum(value: float | None, complete: bool, form: str) -> str:
    """A configuration's cost or tokens: "-" when no trial reported it, and marked "+" when
    some did not, so a partial sum never reads as the whole (an errored trial's zero beside
    trials whose provider reports no price is not a cost of 0)."""
    if value is None:
        return "-"
    return form.format(value) + ("" if complete else "+")


def _ks(values: Mapping[str, float]) -> str:
    return " ".join(f"{k}:{v:.0%}" for k, v in values.items())


def _ci(c: Mapping[str, Any]) -> str:
    return f"[{c['ci_low']:.0%}, {c['ci_high']:.0%}]" if c["trials"] else "-"


def _comparison(comp: Mapping[str, Any], alpha: float | None) -> str:
    head = (f"{comp['candidate']} vs {comp['baseline']}: {comp['verdict']} "
            f"(p = {comp['p_value']:.4g}, mean difference {comp['difference']:+.2f}, "
            f"{comp['discordant']} discordant scenario(s))")
    needed = comp.get("discordant_needed") or (discordant_needed(alpha) if alpha else None)
    if alpha and not comp.get("significant") and needed and 0 < comp["discordant"] < needed:
        # "No significant difference" must not read as "no difference" when the test
        # could not have said otherwise.
        head += (f"; {comp['discordant']} discordant scenario(s) can never reach "
                 f"p < {alpha:g}: it takes {needed}")
    parts = [f"{k} {', '.join(comp[k])}" for k in ("fixed", "broken", "flaky") if comp[k]]
    return head + ("\n    " + "; ".join(parts) if parts else "")


__all__ = ["render", "shown_sum"]
