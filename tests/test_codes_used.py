"""Every diagnostic code in the source is catalogued, and every catalogued code is used.

The scan reads the AST of src/rein, so a code cannot hide in a comment or slip in through a
typo. A string is a code where the source puts one:

* an argument ``code=``/``error_code=``, a parameter default of that name, or an assignment
  to ``code``/``default_code``;
* a positional argument bound to a parameter named ``code`` of a function or class defined
  in rein (``diagnostic(ctx, "RT011", …)``, ``Blocked("RT014", …)``, ``out.add("OAP006", …)``);
* a comparison with something named like a code (``exc.code != "RUN_LOCKED"``,
  ``"RT061" in codes``);
* anywhere at all, a whole string of the catalogue's style (``AREA`` + three digits): that
  covers tables and named constants (``NOTICE_COST = "PLAN003"``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import rein
from rein.core.codes import ALIASES, STYLE, Kind
from rein.errors import ExitCode, ReinError
from rein.formats.diagnostics import ALL_CODES

PACKAGE = Path(rein.__file__).parent  # the package under test, wherever it is imported from
# The catalogues themselves list every code; counting them as uses would prove nothing.
CATALOGUES = ("core/codes", "formats/ags/codes.py", "formats/diagnostics.py")
CODE_NAMES = {"code", "error_code", "default_code"}
SHAPE = re.compile(r"[A-Z][A-Z0-9_]{2,}")  # what a code in a code position looks like
# Strings of the code style that are not rein's codes, each with the reason.
NOT_CODES = {
    "XX001": "PostgreSQL SQLSTATE (data corrupted), mapped to STORE001 in store/postgres.py",
    "XX002": "PostgreSQL SQLSTATE (index corrupted), mapped to STORE001 in store/postgres.py",
}


@dataclass(frozen=True, slots=True)
class Use:
    code: str
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.code}"


def _strings(node: ast.AST) -> Iterator[tuple[str, int]]:
    """String constants of an expression, with their line (``"A" if x else "B"`` gives both)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value, sub.lineno


def _named(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _code_parameters(trees: dict[str, ast.Module]) -> dict[str, set[int]]:
    """Callable name → positions of a parameter named ``code`` (``self`` not counted)."""
    found: dict[str, set[int]] = {}

    def note(name: str, args: ast.arguments, *, method: bool) -> None:
        names = [a.arg for a in (*args.posonlyargs, *args.args)]
        if method and names and names[0] in ("self", "cls"):
            names = names[1:]
        for i, arg in enumerate(names):
            if arg in CODE_NAMES:
                found.setdefault(name, set()).add(i)

    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                note(node.name, node.args, method=True)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                        note(node.name, item.args, method=True)
    return found


def scan(trees: dict[str, ast.Module]) -> tuple[set[Use], set[str]]:
    """The codes used in code positions, and every string constant (for the reverse check)."""
    params = _code_parameters(trees)
    uses: set[Use] = set()
    strings: set[str] = set()

    for path, tree in trees.items():
        def add(node: ast.AST, *, shaped: re.Pattern[str] = SHAPE, path: str = path) -> None:
            for text, line in _strings(node):
                if shaped.fullmatch(text) and text not in NOT_CODES:
                    uses.add(Use(text, f"{path}:{line}"))

        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.add(node.value)
                add(node, shaped=STYLE)
            elif isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg in CODE_NAMES:
                        add(kw.value)
                for i in params.get(_named(node.func) or "", ()):
                    if i < len(node.args):
                        add(node.args[i])
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {_named(t) for t in targets}
                names |= {_named(e) for t in targets if isinstance(t, ast.Tuple) for e in t.elts}
                if names & CODE_NAMES and node.value is not None:
                    add(node.value)
            elif isinstance(node, ast.arguments):
                positional = [*node.posonlyargs, *node.args]
                pairs = [*zip(positional[len(positional) - len(node.defaults):], node.defaults,
                              strict=True), *zip(node.kwonlyargs, node.kw_defaults, strict=True)]
                for arg, default in pairs:
                    if arg.arg in CODE_NAMES and default is not None:
                        add(default)
            elif isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any("code" in (_named(o) or "") for o in operands):
                    for operand in operands:
                        add(operand)
    return uses, strings


def _trees() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(CATALOGUES):
            out[relative] = ast.parse(path.read_text(encoding="utf-8"))
    return out


USES, STRINGS = scan(_trees())


def test_every_code_the_source_uses_is_catalogued() -> None:
    assert sorted(str(u) for u in USES if u.code not in ALL_CODES) == []


def test_no_code_is_emitted_under_an_old_name() -> None:
    assert sorted(str(u) for u in USES if u.code in ALIASES) == []


def test_every_catalogued_code_is_used_or_reserved() -> None:
    unused = [c for c, entry in ALL_CODES.items() if c not in STRINGS and not entry.reserved]
    assert unused == []
    emitted = [c for c, entry in ALL_CODES.items() if entry.reserved and c in STRINGS]
    assert emitted == []  # a reserved code that fires is no longer reserved


def test_the_scan_finds_codes_in_every_position() -> None:
    source = '''
def diagnostic(ctx, code, message): ...
class Problem(Exception):
    default_code = "ZZA001"
    def __init__(self, code, message): ...
def check(exc, codes, code="ZZB_WORD"):
    diagnostic(ctx, "ZZC_WORD", "m")
    raise Problem("ZZD_WORD", "m")
    raise Error("m", code="ZZE_WORD" if exc else "ZZF_WORD")
    if exc.code == "ZZG_WORD" or "ZZH_WORD" in codes: ...
    TABLE = (("ZZI001", "a message"),)
    code, rule = ("ZZJ_WORD", "L1-P1")
    NOT = ("ZZ_NOT_A_CODE", "plain words")
'''
    uses, _ = scan({"m.py": ast.parse(source)})
    assert sorted(u.code for u in uses) == [
        "ZZA001", "ZZB_WORD", "ZZC_WORD", "ZZD_WORD", "ZZE_WORD", "ZZF_WORD", "ZZG_WORD",
        "ZZH_WORD", "ZZI001", "ZZJ_WORD"]


# The kinds an exit status allows: a refusal exits 4 and a usage error 64, whatever raises it.
KINDS_BY_EXIT: dict[ExitCode, set[Kind]] = {
    ExitCode.FAILURE: {"error", "tool", "diagnostic", "finding"},
    ExitCode.REFUSED: {"refused"},
    ExitCode.USAGE: {"usage"},
}


def _error_classes() -> dict[str, set[type[ReinError]]]:
    found: dict[str, set[type[ReinError]]] = {}
    for info in pkgutil.walk_packages(rein.__path__, "rein."):
        for obj in vars(importlib.import_module(info.name)).values():
            if inspect.isclass(obj) and issubclass(obj, ReinError):
                found.setdefault(obj.__name__, set()).add(obj)
    return found


def test_the_catalogued_kind_matches_the_exit_status_of_what_raises_it() -> None:
    """A code catalogued as a refusal must exit 4 wherever it is raised, and so on."""
    classes = _error_classes()
    raised: set[tuple[str, type[ReinError], str]] = set()
    for group in classes.values():
        raised |= {(cls.default_code, cls, cls.__qualname__) for cls in group}
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or len(classes.get(_named(node.func) or "", ())) != 1:
                continue
            [cls] = classes[_named(node.func) or ""]
            for kw in node.keywords:
                if kw.arg == "code":
                    raised |= {(text, cls, f"{path}:{line}") for text, line in _strings(kw.value)}
    wrong = sorted(f"{where}: {code} is {ALL_CODES[code].kind}, raised as {cls.__name__}"
                   for code, cls, where in raised
                   if code in ALL_CODES and ALL_CODES[code].source == "rein"
                   and ALL_CODES[code].kind not in KINDS_BY_EXIT[cls.exit_code])
    assert wrong == []
