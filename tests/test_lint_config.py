"""The lint rules the build enforces (``make lint`` runs ruff on src and tests): bugbear,
the async rules and unused-noqa stay selected, and what is ignored is ignored on purpose."""

from __future__ import annotations

import tomllib

from support import ROOT

LINT = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]


def test_bugbear_async_and_unused_noqa_are_selected() -> None:
    assert {"B", "ASYNC", "RUF100"} <= set(LINT["extend-select"])


def test_only_the_timeout_argument_rule_is_ignored() -> None:
    # ASYNC109: rein's timeouts are part of a result (pyproject.toml says why).
    assert LINT.get("ignore", []) == ["ASYNC109"]
