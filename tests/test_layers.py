"""Imports point down only (DESIGN.md, "Layers"): a surface may use the engine, never the
reverse, and the document layer (formats) depends on nothing but the error tree."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

# Higher ranks may import lower ranks (and their peers); never the other way round.
RANK = {
    "errors": 0, "core": 0,
    "formats": 1,
    "config": 2,
    "providers": 3, "tools": 3, "store": 3, "profiles": 3,
    "workers": 4, "telemetry": 4,
    "engine": 5,
    "cli": 6,
    "__init__": 7,
}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rein."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("rein.")}
    return found


def test_every_layer_is_ranked_and_imports_point_down() -> None:
    package = ROOT / "src" / "rein"
    upward = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        layer = parts[0] if len(parts) > 1 else parts[0][:-3]
        assert layer in RANK, f"{layer} has no place in the layer ranks: add it"
        for target in _imports(path) - {layer}:
            assert target in RANK, f"{path.name} imports unranked rein.{target}"
            if RANK[target] > RANK[layer]:  # peers of one rank (config modules) may share
                upward.append(f"{path.relative_to(package)} imports rein.{target}")
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from rein.engine.runner import Engine\n")
    assert _imports(module) == {"engine"}
