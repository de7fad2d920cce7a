"""rein.core.toml_plain reads plain TOML exactly as tomllib reads it (the same keys in the
same order, the same values of the same types), and reads nothing else: TOML beyond its
part and text that is not TOML are ``None``, for tomllib to read or refuse."""

from __future__ import annotations

import json
import random
import re
import tomllib

import pytest
from support import ROOT

from rein.core.toml_plain import read


def typed(data: object) -> str:
    """``data`` as JSON: 1, 1.0 and true differ there, and so does the order of keys."""
    return json.dumps(data, ensure_ascii=False)


PLAIN = [
    "",
    "\n\n  \t\n",
    "# only a comment",
    "[store]\n",
    "[store]",
    'a = "x"',
    "a = 1\r\nb = 2\r\n",
    '[driver]\nenabled = true\ntiers = ["standard", "deep"]\n',
    "[policy]\nmax_cost_usd = 5.0\nmax_turns = 50\nshell = 'ask'  # narrowest wins\n",
    "n = [1, -2, +3, 0, -0, 1_000, 4.5, -0.0, 1e3, 1E-2, 6.02e+2_3, 1_0.0_1]\n",
    "b = [true, false]\nc = []\nd = [ ]\ne = [\n]\n",
    'tools = [\n  "read",  # the reader\n  "edit",\n\n  # more later\n]\n',
    "[a.b]\n[a]\nc = 1\n",
    '[ a . "b c" . \'d\' ]\n"" = 1\n\'e f\' = 2\n',
    '[tiers.standard]\nprovider = "openai"\n[tiers.deep]\nprovider = "anthropic"\n',
    'u = "é – ü 日本 \t tab"\nv = \'C:\\path\\file\'\n',
    'k = "#not a comment" # a comment\n',
    "1234 = 1\n-_- = 2\nA-Z_0 = 3\n",
    "[executor]\nrate_limit = { limit = 50, period = 60 }\n",
    'x = {}\ny = { a = [1, 2], b = { c = "d" } }\nz = [ { a = 1 }, { a = 2 } ]\n',
    'o = { script = "turns.json", position = 3 }\n[p.q]\nr = 1\n',
]

BEYOND = [
    'a = "x\\ty"',
    'a = """two\nlines"""',
    "a = '''raw'''",
    "a.b = 1",
    "[a]\nb.c = 1",
    "[[runs]]\nid = 1",
    "a = [[1, 2], [3]]",
    "d = 1979-05-27",
    "t = 07:32:00",
    "dt = 1979-05-27T07:32:00Z",
    "a = inf",
    "a = -nan",
    "a = 0x1F",
    "a = 0o17",
    "a = 0b101",
    'a = { b.c = 1 }',
]

INVALID = [
    "[a",
    "a = ",
    "a = 1\na = 2",
    "[a]\n[a]",
    "a = 1\n[a]",
    "[a]\nb = 1\n[a.b]",
    "a = 01",
    "a = 1.",
    "a = .5",
    "a = 1__0",
    "a = _1",
    "a = truex",
    "a = True",
    "a = 1 2",
    'a = "unterminated',
    'a = "a\nb"',
    "a = [1 2]",
    "a = [,]",
    "a = { b = 1, }",
    "a = { b = 1, b = 2 }",
    "x = { a = 1 }\n[x]",
    "x = { a = 1 }\n[x.b]",
    "x = [1]\n[x]",
    "[]",
    "[a]]",
    "a = 1 # \x01 control",
    "a = 1\rb = 2",
    "\ufeffa = 1",
    "a == 1",
    "= 1",
    'a = "\x7f"',
    "[a] b = 1",
]


@pytest.mark.parametrize("text", PLAIN)
def test_plain_toml_reads_as_tomllib_reads_it(text: str) -> None:
    got = read(text)
    assert got is not None
    assert typed(got) == typed(tomllib.loads(text))


@pytest.mark.parametrize("text", BEYOND)
def test_toml_beyond_the_plain_part_is_left_to_tomllib(text: str) -> None:
    tomllib.loads(text)  # valid TOML
    assert read(text) is None


@pytest.mark.parametrize("text", INVALID)
def test_text_that_is_not_toml_is_never_read(text: str) -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    assert read(text) is None


def test_an_integer_too_long_for_int_is_left_to_tomllib() -> None:
    text = "a = " + "9" * 5000
    with pytest.raises(ValueError):  # int() refuses more than 4,300 digits
        tomllib.loads(text)
    assert read(text) is None


def test_inline_tables_nested_very_deep_are_left_to_tomllib() -> None:
    assert read("a = " + "{b = " * 5000 + "1" + "}" * 5000) is None


def test_the_rein_toml_of_the_documentation_reads_as_tomllib_reads_it() -> None:
    blocks = [block for path in sorted((ROOT / "docs").glob("*.md"))
              for block in re.findall(r"```toml\n(.*?)```", path.read_text(),
                                         re.DOTALL)]
    read_here = 0
    for block in blocks:
        got = read(block)
        if got is not None:
            assert typed(got) == typed(tomllib.loads(block)), block
            read_here += 1
    assert read_here >= 25 and len(blocks) - read_here <= 4, (read_here, len(blocks))


# Pieces of documents: each list's first part is plain TOML, the rest is not (TOML beyond
# the plain part, or not TOML at all).
_KEYS = (["a", "b", "c", '"a"', "'b'", '""', "1", "-"], ["a.b", "a b", "[a]"])
_VALUES = (["1", "+1", "-0", "0", "1_000", "1.5", "-1e3", "1e+3", "1E-0_1", "1e400",
            "9007199254740993", "true", "false", '"s"', '"é ü"', "'lit\\x'", '""', "''",
            '"\ttab"', "[]", "[1, 2]", "[1,2,]", "[ \"a\" , 'b' ]", "[\n1,\n# c\n2\n]",
            "[1,\n]", "{a = 1}", "{}", "{ a = [1,\n2] }", "{ a = { b = 1 } }", "[{a = 1}]"],
           ["01", "1__0", "1_", "1.", ".5", "1e", "inf", "-nan", "0x1F", "0o7", "0b1", "True",
            "truex", '"s\\"', '"a\\tb"', '"""m"""', "'''m'''", '"open', "'open",
            '"ctl\x01"', "[1 2]", "[,]", "[[1]]", "{ a = 1, }", "{a=1,a=2}", "1979-05-27",
            "07:32:00", "2024-01-01T00:00:00Z"])
_EQUALS = ([" = ", "=", " =", "= "], ["==", " : "])
_ENDS = (["", " ", " # c", "#c", "\t"], [" x", "  # \x7f"])
_HEADERS = (["[a]", "[a.b]", '[ "a" . b ]', "[b]", "[a . c]", "['lit'.x]", "[c.d.e]", "[c]"],
            ["[[a]]", "[]", "[a", "[a]]"])
_OTHERS = (["", "# comment", "   ", "\t# tab"], ["garbage", "\r", "\ufeffa = 1", "= 1"])


def _pick(rng: random.Random, pieces: tuple[list[str], list[str]]) -> str:
    """Mostly a plain piece, now and then another."""
    return rng.choice(pieces[1] if rng.random() < 0.04 else pieces[0])


def _document(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(1, 6)):
        kind = rng.random()
        if kind < 0.25:
            lines.append(_pick(rng, _HEADERS) + _pick(rng, _ENDS))
        elif kind < 0.85:
            lines.append(_pick(rng, _KEYS) + _pick(rng, _EQUALS) + _pick(rng, _VALUES)
                         + _pick(rng, _ENDS))
        else:
            lines.append(_pick(rng, _OTHERS))
    return rng.choice(["\n", "\r\n"]).join(lines) + rng.choice(["", "\n"])


def test_generated_documents_read_as_tomllib_reads_them_or_not_at_all() -> None:
    """Documents made of the pieces above, good and bad, in every order: whatever is read
    here, tomllib reads the same."""
    rng = random.Random(20261207)
    read_here = beyond = refused = 0
    for _ in range(6000):
        text = _document(rng)
        try:
            expected: object = tomllib.loads(text)
        except ValueError:  # TOMLDecodeError, or an integer int() refuses
            expected = None
        got = read(text)
        if got is not None:
            assert expected is not None and typed(got) == typed(expected), repr(text)
            read_here += 1
        elif expected is not None:
            beyond += 1
        else:
            refused += 1
    # Each kind is met often enough for the comparison to mean something.
    assert read_here >= 2000 and beyond >= 100 and refused >= 2000, (read_here, beyond,
                                                                     refused)
