"""rein.formats.dotted: a dotted name alone, known and read as AGX would, without AGX.

Checked against the parser and the evaluator on generated text and values: a name it knows
is the parser's ``Reference`` with that path, and what it reads is what the evaluator gives,
or the evaluator raises where it gives up.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rein.formats.agx import AgxEvalError, AgxSyntaxError, MappingScope, evaluate, parse
from rein.formats.agx.parser import _Parser
from rein.formats.agx.tree import Reference
from rein.formats.dotted import NotPlain, plain_reference, read

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = ["a", "b", "nodes", "outputs", "in", "not", "true", "null", "x_1", "_", "ü", "1a"]


@FAST
@given(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
       st.sampled_from([".", ". ", " .", "..", "."]), st.sampled_from(["", " ", "()", "[0]"]))
def test_a_name_it_knows_is_the_parsers_reference_and_the_rest_it_leaves(
        names: list[str], dot: str, tail: str) -> None:
    text = dot.join(names) + tail
    path = plain_reference(text)
    try:
        tree: Any = _Parser(text).parse()
    except AgxSyntaxError:
        tree = None
    if path is not None:
        assert tree == Reference(path=path, offset=0)
    else:  # left to the parser: never a name written plainly
        assert not (isinstance(tree, Reference) and text == ".".join(tree.path))


def test_its_keywords_are_agxs() -> None:
    from rein.formats.agx.lexer import KEYWORDS as AGX_KEYWORDS
    from rein.formats.dotted import KEYWORDS

    assert KEYWORDS == AGX_KEYWORDS


@pytest.mark.parametrize("text", ["nodes.a", "x", "a.in.b", "self.outputs.module"])
def test_a_plain_dotted_name_is_known(text: str) -> None:
    assert plain_reference(text) == tuple(text.split("."))


@pytest.mark.parametrize("text", ["", " a", "a ", "a..b", "a.", ".a", "true", "null.x",
                                  "in.a", "a.1", "a.b()", "a[0]", "naïve", "a == b"])
def test_anything_else_is_not(text: str) -> None:
    assert plain_reference(text) is None


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=2)
                    | st.dictionaries(st.sampled_from(["a", "b", "in"]), inner, max_size=3),
                    max_leaves=8)


@FAST
@given(st.dictionaries(st.sampled_from(["a", "b", "nodes"]), JSON, max_size=3),
       st.sampled_from(["a", "b", "nodes"]),
       st.lists(st.sampled_from(["a", "b", "in", "nodes"]), max_size=3))
def test_what_it_reads_is_what_the_evaluator_gives_or_the_evaluator_raises(
        roots: dict[str, Any], root: str, members: list[str]) -> None:
    path = (root, *members)
    scope = MappingScope(roots)
    try:
        got: Any = read(path, scope)
    except NotPlain:
        with pytest.raises(AgxEvalError):
            evaluate(parse(".".join(path)), scope)
        return
    assert got == evaluate(parse(".".join(path)), scope)


def test_it_imports_no_part_of_agx() -> None:
    code = ("import sys, rein.formats.dotted; "
            "print(sorted(m for m in sys.modules if m.startswith('rein.formats.agx')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
