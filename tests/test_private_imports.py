"""No module imports another module's private names (STYLE.md 2): a name one module starts
with ``_`` is free to change without a look at the rest of the tree. A helper two modules
share gets a public name in a module of its own. Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

from support import ROOT

PACKAGE = ROOT / "src" / "rein"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, path: Path) -> str:
    """The module an ``import from`` names, relative imports made absolute."""
    if not node.level:
        return node.module or ""
    package = _module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def private_imports(source: str, path: Path) -> list[str]:
    """``module.name`` for each private name of a rein module that ``source`` imports."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = _absolute(node, path)
            if module != "rein" and not module.startswith("rein."):
                continue
            if any(_private(part) for part in module.split(".")):
                found.append(module)
            found += [f"{module}.{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.startswith("rein.") and any(_private(p) for p in a.name.split("."))]
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in private_imports(path.read_text(encoding="utf-8"), path):
            offences.append(f"{path.relative_to(PACKAGE.parent)}: {name}")
    assert offences == [], "give these a public name where both modules can reach it"


def test_the_scan_sees_every_spelling_of_a_private_import() -> None:
    here = PACKAGE / "cli" / "profile_session.py"
    source = """
from rein.cli.profile import _now, profile
from .profile import _CONTEXT
from ..store.sql import _HELD
import rein.store._vendor
from rein.cli import profile as _alias

def later():
    from rein.cli.runs import _why
"""
    assert sorted(private_imports(source, here)) == [
        "rein.cli.profile._CONTEXT", "rein.cli.profile._now", "rein.cli.runs._why",
        "rein.store._vendor", "rein.store.sql._HELD"]
