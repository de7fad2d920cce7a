"""The validator's shortcut for simple expressions reads exactly what the AGX parser reads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rein.formats.ags.expressions import Reads, expression_reads, template_reads
from rein.formats.agx import AgxSyntaxError, calls, parse, parse_template, references

names = st.sampled_from(["nodes", "params", "a", "b_1", "_x", "outputs", "in", "true",
                         "not", "null", "x9"])
refs = st.lists(names, min_size=1, max_size=4).map(".".join)
literals = st.sampled_from(['"ok"', "'it'", "1", "2.5", "true", "false", "null", '""',
                            "01", "1.", ".5", "1e3", '"a\\"b"', '"x}}"'])
ops = st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "=", "-", ""])
space = st.sampled_from(["", " ", "  ", "\t", "\n"])


def parser_reads(text: str, template: bool = False) -> tuple[tuple, tuple]:
    tree = parse_template(text) if template else parse(text)
    return (tuple(r.path for r in references(tree)),
            tuple((c.name, c.args) for c in calls(tree)))


def shortcut_reads(reads: Reads) -> tuple[tuple, tuple]:
    return (reads.refs, reads.calls)


def outcome(fn, text: str):
    try:
        return fn(text)
    except AgxSyntaxError:
        return "AG204"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(space, refs, space, ops, space, literals, space)
def test_simple_expressions_match_the_parser(a, ref, b, op, c, lit, d) -> None:
    text = f"{a}{ref}{b}{op}{c}{lit if op else ''}{d}"
    fast = outcome(lambda t: shortcut_reads(expression_reads(t)), text)
    assert fast == outcome(parser_reads, text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from(["", "Use ", "}} ", "${{ ", " and "]), refs,
                          space), max_size=3),
       st.sampled_from(["", "${{", "}}", "${{ }}", " done"]))
def test_simple_templates_match_the_parser(parts, tail) -> None:
    text = "".join(f"{lead}${{{{ {ref}{sp}}}}}" for lead, ref, sp in parts) + tail
    fast = outcome(lambda t: shortcut_reads(template_reads(t)), text)
    assert fast == outcome(lambda t: parser_reads(t, template=True), text)


@pytest.mark.parametrize("text", ["nodes.a.outputs.b", 'nodes.a.status == "ok"',
                                  "params.n >= 2"])
def test_common_shapes_read_their_one_reference(text: str) -> None:
    assert expression_reads(text).refs == (tuple(text.split(" ")[0].split(".")),)
