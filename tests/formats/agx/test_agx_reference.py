"""Differential tests against the AGS reference validator's AGX parser (``ags`` package).

rein accepts exactly what the reference accepts, with deliberate differences, each pinned
here so a change on either side is noticed:

* ``1-1``, ``x -1``, ``len(a)-1`` are subtraction in rein; the reference lexes ``-1`` as a
  signed literal and rejects them (AG204).
* a literal argument of the wrong type (``len(5)``, ``lower(null)``, ``matches(s, "(")``)
  is AG204 in rein, as AGS asks where it is statically detectable; the reference checks
  only names and arity.
* unknown string escapes (``"\\q"``) are rejected by rein; the reference accepts any
  backslash pair without decoding it.
* templates: an unterminated ``${{`` and an empty ``${{ }}`` are errors in rein, and ``}}``
  inside a quoted string does not end an interpolation; the reference's non-greedy pattern
  ignores the first two and cuts the third.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import EXAMPLES, shared_path

from rein.formats.agx import AgxSyntaxError, calls, parse, parse_template, references
from rein.formats.loader import load_path

ags = pytest.importorskip("ags")
REF = ags.reference_validator()

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def reference_accepts(text: str) -> bool:
    """The reference's verdict: its parser, then its separate function and arity check."""
    try:
        parser = REF.parse_expression(text)
    except REF.AgxError:
        return False
    for name, arity in parser.calls:
        expected = REF.FUNCTIONS.get(name)
        if expected is None:
            return False
        low, high = expected if isinstance(expected, tuple) else (expected, expected)
        if not low <= arity <= high:
            return False
    return True


def rein_accepts(text: str) -> bool:
    try:
        parse(text)
    except AgxSyntaxError:
        return False
    return True


def static_type_rejection(text: str) -> bool:
    """True when rein rejects ``text`` for a literal argument of the wrong type."""
    try:
        parse(text)
    except AgxSyntaxError as err:
        return "() needs " in err.reason or err.reason.startswith("invalid regular expression")
    return False


def number_runs_into_name(text: str) -> bool:
    """True when rein rejects ``text`` for a number written against a name (``1and a``):
    the reference splits it into a number and a keyword, rein asks for a space."""
    try:
        parse(text)
    except AgxSyntaxError as err:
        return err.reason.startswith("a number cannot run into a name")
    return False


def signed_literal_quirk(text: str) -> bool:
    """True when the reference rejects ``text`` only because it lexes ``-<digit>`` as a signed
    number: with a space after each such minus it accepts."""
    return reference_accepts(re.sub(r"-(?=\d)", "- ", text))


def test_function_tables_agree() -> None:
    from rein.formats.agx import FUNCTIONS

    theirs = {
        name: arity if isinstance(arity, tuple) else (arity, arity)
        for name, arity in REF.FUNCTIONS.items()
    }
    assert dict(FUNCTIONS) == theirs
    assert REF.KEYWORDS == {"true", "false", "null", "and", "or", "not", "in"}


@pytest.mark.parametrize("text", ["1-1", "x -1", "len(a)-1", "a.b-2.5", "(a)-1"])
def test_subtraction_without_space_is_a_deliberate_difference(text: str) -> None:
    assert not reference_accepts(text)
    assert rein_accepts(text)
    assert reference_accepts(text.replace("-", "- "))


@pytest.mark.parametrize("text", ["len(5)", "lower(null)", "matches(s, '(')", "any([1])"])
def test_static_argument_types_are_a_deliberate_difference(text: str) -> None:
    assert reference_accepts(text)
    assert static_type_rejection(text)


def test_a_number_against_a_keyword_is_a_deliberate_difference() -> None:
    assert reference_accepts("1and a")
    assert number_runs_into_name("1and a")


def test_unknown_escape_is_a_deliberate_difference() -> None:
    assert reference_accepts(r'"a\qb"')
    assert not rein_accepts(r'"a\qb"')


@pytest.mark.parametrize("text", ["a[0]", '{"a": 1}', "a.lower()", "1e3", ".5", "now()",
                                  "a not in b", "a = 1", "x ? y : z", "len(a, b)", "[1,]"])
def test_both_reject(text: str) -> None:
    assert not reference_accepts(text)
    assert not rein_accepts(text)


TOKENS = ["a", "b", "nodes", "x1", ".", "1", "2.5", "0", '"s"', "'t'", "(", ")", "[", "]",
          ",", "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "!",
          "and", "or", "not", "in", "true", "false", "null", "len", "get", "contains",
          "output", "frob", "="]
token_soup = st.lists(
    st.tuples(st.sampled_from(TOKENS), st.sampled_from(["", " ", " "])), max_size=12
).map(lambda pairs: "".join(tok + gap for tok, gap in pairs))


@FAST
@given(token_soup)
def test_acceptance_agrees_on_token_soup(text: str) -> None:
    ours, theirs = rein_accepts(text), reference_accepts(text)
    if ours and not theirs:
        assert signed_literal_quirk(text), text
    elif theirs and not ours:
        assert static_type_rejection(text) or number_runs_into_name(text), text
    else:
        assert ours == theirs, text


names = st.sampled_from(["a", "params.n", "nodes.build.outputs.report", "loop.index", "page"])
literals = st.sampled_from(["1", "2.5", '"s"', "'t'", "true", "false", "null", "0"])


def _call(args: list[str]) -> str:
    return f"get({', '.join(args[:2])})" if len(args) >= 2 else f"len({args[0]})"


expressions = st.recursive(
    names | literals,
    lambda sub: st.one_of(
        st.tuples(sub, st.sampled_from(["+", "-", "*", "==", "<=", "&&", "or", "in", "%"]), sub)
        .map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        sub.map(lambda s: f"({s})"),
        sub.map(lambda s: f"!{s}"),
        sub.map(lambda s: f"-{s}"),
        st.lists(sub, max_size=3).map(lambda xs: f"[{', '.join(xs)}]"),
        st.lists(sub, min_size=1, max_size=2).map(_call),
    ),
    max_leaves=8,
)


@FAST
@given(expressions)
def test_well_formed_expressions_agree(text: str) -> None:
    if not rein_accepts(text):
        assert static_type_rejection(text), text
        return
    assert reference_accepts(text) or signed_literal_quirk(text)
    theirs = [tuple(r.parts) for r in REF.parse_expression(re.sub(r"-(?=\d)", "- ", text))
              .references]
    assert [r.path for r in references(parse(text))] == theirs


def test_template_differences() -> None:
    def reference_template_ok(text: str) -> bool:
        return all(reference_accepts(m.group(1).strip()) or not m.group(1).strip()
                   for m in REF.TEMPLATE_RE.finditer(text))

    # the reference ignores an unterminated or empty interpolation; rein refuses both
    for text in ["x ${{ a", "x ${{ }}"]:
        assert reference_template_ok(text)
        with pytest.raises(AgxSyntaxError):
            parse_template(text)
    # a '}}' inside a string: rein keeps it in the string, the reference cuts there
    text = 'x ${{ "}}" }}'
    assert not reference_template_ok(text)
    parse_template(text)


# ----------------------------------------------------------------- official examples

EXPRESSION_KEYS = {"when", "expr", "from", "over", "condition", "target"}


def _strings(value: Any, key: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _strings(v, k)]
    if isinstance(value, list):
        return [pair for v in value for pair in _strings(v, key)]
    return [(key, value)] if isinstance(value, str) else []


def _example_files() -> list[Path]:
    found = sorted(EXAMPLES.glob("*.agraph.*")) if EXAMPLES.is_dir() else []
    shared = shared_path("ags-examples")
    if shared is not None:
        found += sorted(shared.glob("*.agraph.yaml"))
    return found


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: p.name)
def test_example_expressions_parse_like_the_reference(path: Path) -> None:
    document = load_path(path)
    checked = 0
    for key, text in _strings(document.data):
        if "${{" in text:
            template = parse_template(text)
            theirs = [tuple(r.parts) for m in REF.TEMPLATE_RE.finditer(text)
                      for r in REF.parse_expression(m.group(1).strip()).references]
            assert [r.path for r in references(template)] == theirs
            checked += 1
        elif key in EXPRESSION_KEYS and (key != "from" or "." in text):
            # an edge's ``from`` is a node id; an input's ``from`` reads something dotted
            expr = parse(text)
            parser = REF.parse_expression(text)
            assert [r.path for r in references(expr)] == [tuple(r.parts) for r in
                                                           parser.references]
            # the reference lists a call after the calls in its arguments: compare as sets
            assert sorted((c.name, len(c.args)) for c in calls(expr)) == sorted(parser.calls)
            checked += 1
    assert checked > 0
