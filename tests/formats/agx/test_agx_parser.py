"""Parsing: the tree's shape (precedence, associativity), literals, and every syntax error
with the exact message an author sees."""

from __future__ import annotations

import pytest

from rein.formats.agx import AgxSyntaxError, Expr, parse
from rein.formats.agx.parser import MAX_DEPTH, MAX_NESTING
from rein.formats.agx.tree import ArrayLit, Binary, FunctionCall, Literal, Node, Reference, Unary


def sexpr(node: Node) -> str:
    """A fully parenthesised rendering, so a test can state the tree it expects."""
    match node:
        case Literal(value=value):
            return repr(value)
        case Reference(path=path):
            return ".".join(path)
        case Unary(op=op, operand=operand):
            return f"({op} {sexpr(operand)})"
        case Binary(op=op, left=left, right=right):
            return f"({sexpr(left)} {op} {sexpr(right)})"
        case FunctionCall(name=name, args=args):
            return f"{name}({', '.join(sexpr(a) for a in args)})"
        case ArrayLit(items=items):
            return f"[{', '.join(sexpr(i) for i in items)}]"
    raise AssertionError(node)


SHAPES = [
    # multiplicative binds tighter than additive, both left-associative
    ("1 + 2 * 3", "(1 + (2 * 3))"),
    ("1 * 2 + 3", "((1 * 2) + 3)"),
    ("8 - 4 - 2", "((8 - 4) - 2)"),
    ("8 / 4 / 2", "((8 / 4) / 2)"),
    ("7 % 4 * 2", "((7 % 4) * 2)"),
    # unary binds tighter than everything binary
    ("-a * b", "((- a) * b)"),
    ("!a && b", "((! a) && b)"),
    ("not a == b", "((! a) == b)"),
    ("- - 1", "1"),
    ("-(1)", "-1"),
    ("!!a", "(! (! a))"),
    # comparison above equality above in above and above or
    ("a < b == c > d", "((a < b) == (c > d))"),
    ("a == b in c", "((a == b) in c)"),
    ("x in y && z", "((x in y) && z)"),
    ("a || b && c", "(a || (b && c))"),
    ("a && b || c && d", "((a && b) || (c && d))"),
    ("a or b and not c", "(a || (b && (! c)))"),
    ("a + b < c * d", "((a + b) < (c * d))"),
    ("1 < 2 < 3", "((1 < 2) < 3)"),
    ("a == b != c", "((a == b) != c)"),
    ("a in b in c", "((a in b) in c)"),
    ("(a || b) && c", "((a || b) && c)"),
    ("(1 + 2) * 3", "((1 + 2) * 3)"),
    # subtraction without spaces: deliberate difference from the reference validator
    ("1-1", "(1 - 1)"),
    ("x -1", "(x - 1)"),
    ("len(a)-1", "(len(a) - 1)"),
    ("a-b", "(a - b)"),
    ("2*-1", "(2 * -1)"),
    ("1 --1", "(1 - -1)"),
    # primaries
    ("[1, 'a', null, true, false]", "[1, 'a', None, True, False]"),
    ("[]", "[]"),
    ("[[1], []]", "[[1], []]"),
    ("get(a.b, \"c.d\", 0)", "get(a.b, 'c.d', 0)"),
    ("nodes.build.outputs.report", "nodes.build.outputs.report"),
    ("nodes . build . outputs", "nodes.build.outputs"),
    ("nodes.in.outputs.not", "nodes.in.outputs.not"),  # keywords are fine as member names
    ("_x1.Y_2", "_x1.Y_2"),
    ("12", "12"),
    ("1.5", "1.5"),
    ("007", "7"),
]


@pytest.mark.parametrize(("text", "shape"), SHAPES)
def test_tree_shape(text: str, shape: str) -> None:
    assert sexpr(parse(text).body) == shape


def test_numbers_keep_their_type() -> None:
    assert type(parse("12").body.value) is int  # type: ignore[union-attr]
    assert type(parse("1.50").body.value) is float  # type: ignore[union-attr]
    assert parse("-2.5").body == Literal(value=-2.5, offset=0)


def test_parse_returns_expr_with_source_and_caches() -> None:
    first = parse("a == 1")
    assert isinstance(first, Expr)
    assert first.source == "a == 1"
    assert str(first) == "a == 1"
    assert parse("a == 1") is first


def test_offsets_point_at_tokens() -> None:
    body = parse("  a.b + len(c)").body
    assert isinstance(body, Binary)
    assert body.offset == 6
    assert body.left.offset == 2
    assert body.right.offset == 8


STRINGS = [
    (r'"plain"', "plain"),
    (r"'single'", "single"),
    (r'"a\nb\tc"', "a\nb\tc"),
    (r'"quote \" and \\ backslash"', 'quote " and \\ backslash'),
    (r"'it\'s'", "it's"),
    (r'"\u00e9\u4e2d"', "é中"),
    (r'"\ud83d\ude00"', "😀"),
    (r'"\/\r\b\f"', "/\r\b\f"),
    ('"raw é and\nnewline"', "raw é and\nnewline"),
    ('""', ""),
]


@pytest.mark.parametrize(("text", "value"), STRINGS)
def test_string_literals(text: str, value: str) -> None:
    assert parse(text).body == Literal(value=value, offset=0)


# (text, exact message, exact hint or None to skip, offset)
SYNTAX_ERRORS = [
    ("", "empty expression at column 1", "write a value or a condition, e.g. x == 1", 0),
    ("   ", "empty expression at column 1", None, 0),
    ("length(x)", "unknown function 'length' at column 1; did you mean 'len'?", None, 0),
    ("a && lenn(x)", "unknown function 'lenn' at column 6; did you mean 'len'?", None, 5),
    ("frobnicate(x)", "unknown function 'frobnicate' at column 1", None, 0),
    ("len(1, 2)", "len() takes 1 argument, got 2 at column 1", "call it as len(x)", 0),
    ("len()", "len() takes 1 argument, got 0 at column 1", None, 0),
    ("get(a)", "get() takes 2 or 3 arguments, got 1 at column 1", None, 0),
    ("get(a, 'b', 1, 2)", "get() takes 2 or 3 arguments, got 4 at column 1", None, 0),
    ("output('a')", "output() takes 2 arguments, got 1 at column 1", None, 0),
    ("a[0]", "indexing with [...] is not supported at column 2",
     'use get(a, "0") to read an element or key', 1),
    ("len(x)[0]", "indexing with [...] is not supported at column 7", None, 6),
    ('{"a": 1}', "object literals are not supported at column 1", None, 0),
    ("a.lower()", "method calls are not supported at column 2",
     "write lower(a) instead of a.lower()", 1),
    ("a.b.frob(1)", "method calls are not supported at column 4", None, 3),
    ("1e3", "exponents are not supported ('1e3') at column 1",
     "write the number out in full, e.g. 1000 instead of 1e3", 0),
    ("2.5E-10", "exponents are not supported ('2.5E-10') at column 1", None, 0),
    (".5", "'.5' is not a number: write 0.5 at column 1", None, 0),
    ("1 + .25", "'.25' is not a number: write 0.25 at column 5", None, 4),
    ("1.", "'1.' is not a number: write 1.0 or 1 at column 2", None, 1),
    ("1.2.3", "a number has at most one decimal point (after '1.2') at column 4", None, 3),
    ("12abc", "a number cannot run into a name ('12a'...) at column 3", None, 2),
    ("a.5", "member names cannot start with a digit at column 3",
     'to read element or key "5" write get(a, "5")', 2),
    ("a.", "expected a name after '.' at column 3", None, 2),
    ("a.(b)", "expected a name after '.' at column 3", None, 2),
    ("(a).b", "'.' can only follow a name at column 4",
     'use get((a), "member") to read a member of a computed value', 3),
    ("(a)(b)", "only function names can be called at column 4", None, 3),
    ("a = 1", "'=' is not an operator at column 3", "to compare, write '=='", 2),
    ("a & b", "'&' is not an operator at column 3", None, 2),
    ("a | b", "'|' is not an operator at column 3", None, 2),
    ("a ? b : c", "conditional expressions 'a ? b : c' are not supported at column 3", None, 2),
    ("a # note", "comments are not supported in expressions at column 3", None, 2),
    ("a @ b", "unexpected character '@' at column 3", None, 2),
    ("café", "unexpected character 'é' at column 4", None, 3),
    ("${{ a }}", "'${{ }}' interpolation is for templates, not expressions at column 1", None, 0),
    ("a }}", "'}}' without a matching '${{' at column 3", None, 2),
    ('"abc', "unterminated string at column 1", 'close it with "', 0),
    ("'abc\\'", "unterminated string at column 1", None, 0),
    (r'"\q"', "unknown escape '\\q' in a string at column 2", None, 1),
    (r'"\u12"', "'\\u' must be followed by exactly four hex digits at column 2", None, 1),
    (r'"\ud800"', "lone surrogate in a \\u escape at column 2", None, 1),
    ("(1", "missing ')' at column 3 to close the '(' at column 1", "add ')'", 2),
    ("[1, 2", "missing ']' at column 6 to close the '[' at column 1", None, 5),
    ("len(x", "missing ')' at column 6 to close the '(' at column 4", None, 5),
    ("[1 2]", "expected ',' or ']' but found the number 2 at column 4", None, 3),
    ("len(a b)", "expected ',' or ')' but found 'b' at column 7", None, 6),
    ("(a b)", "expected ')' but found 'b' at column 4", None, 3),
    ("[1,]", "trailing ',' before ']' at column 3", "remove the ','", 2),
    ("len(a,)", "trailing ',' before ')' at column 6", None, 5),
    ("1)", "unmatched ')' at column 2", None, 1),
    ("a b", "unexpected 'b' at column 3", None, 2),
    ("a 'x'", "unexpected a string at column 3", None, 2),
    ("a not in b", "'not in' is not an operator at column 3", "write !(x in y) or not (x in y)", 2),
    ("1 +", "the expression ends where a value was expected after '+' at column 4", None, 3),
    ("&& a", "expected a value but found '&&' at column 1", None, 0),
    ("a && or", "expected a value but found 'or' at column 6", None, 5),
    ("in", "expected a value but found 'in' at column 1", None, 0),
    (",", "expected a value but found ',' at column 1", None, 0),
    ("true.x", "'.' can only follow a name at column 5", None, 4),
    ("a ==\n  b +", "the expression ends where a value was expected after '+' at line 2, column 6",
     None, 10),
]


@pytest.mark.parametrize(("text", "message", "hint", "offset"), SYNTAX_ERRORS)
def test_syntax_errors(text: str, message: str, hint: str | None, offset: int) -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse(text)
    err = caught.value
    assert err.message == message
    assert err.code == "AG204"
    assert err.offset == offset
    assert err.text == text
    assert err.hint  # every syntax error says how to fix it
    if hint is not None:
        assert err.hint == hint


def test_unknown_function_hint_lists_the_functions() -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse("size(x)")
    assert caught.value.message == "unknown function 'size' at column 1; did you mean 'len'?"
    assert caught.value.hint is not None and "len, count, contains" in caught.value.hint


def test_syntax_error_serialises_with_position() -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse("a &")
    data = caught.value.to_json()
    assert data["code"] == "AG204"
    assert data["offset"] == 2
    assert data["text"] == "a &"


def test_nesting_is_bounded() -> None:
    ok = "(" * MAX_NESTING + "1" + ")" * MAX_NESTING
    assert sexpr(parse(ok).body) == "1"
    with pytest.raises(AgxSyntaxError, match="nests more than 32 levels deep"):
        parse("(" * (MAX_NESTING + 1) + "1" + ")" * (MAX_NESTING + 1))
    with pytest.raises(AgxSyntaxError, match="nests more than"):
        parse("!" * 5000 + "true")
    with pytest.raises(AgxSyntaxError, match="nests more than"):
        parse("[" * 5000)


def test_long_operator_chains_are_bounded() -> None:
    parse(" + ".join(["1"] * (MAX_DEPTH - 1)))
    with pytest.raises(AgxSyntaxError, match="too deeply nested"):
        parse(" + ".join(["1"] * (MAX_DEPTH + 1)))
    # A long flat array is wide, not deep.
    parse("[" + ", ".join(["1"] * 5000) + "]")


def test_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not int"):
        parse(5)  # type: ignore[arg-type]
