"""Regular expressions on an agent's text run in linear time, or are refused by name.

The pattern of the report, ``^(\\w+\\s?)*$``, backtracks exponentially in Python's ``re``:
4 s on 24 characters and a final ``!``, twice as long for each one more, so days on 41.
Here it is searched in texts of 41 and 200,000 characters; a backtracking matcher never
returns, so these tests fail by the suite's timeout on one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rein.formats.agx import AgxEvalError, AgxSyntaxError, MappingScope, evaluate, parse
from rein.formats.agx.patterns import Found, PatternError, compile_pattern

EXPONENTIAL = r"^(\w+\s?)*$"
REPORTED = "a" * 41 + "!"  # the 41 characters of the report, and one that cannot match
LONG = "ab " * 66_666 + "!"


def test_the_reported_pattern_answers_on_its_text_and_on_a_long_one() -> None:
    pattern = compile_pattern(EXPONENTIAL)
    assert pattern.search(REPORTED) is None
    assert pattern.search(LONG) is None
    assert pattern.search("ab cd") == Found(start=0, end=5, text="ab cd")


def test_agx_matches_answers_on_the_reported_pattern() -> None:
    scope = MappingScope({"text": REPORTED, "long": LONG, "pattern": EXPONENTIAL})
    literal = EXPONENTIAL.replace("\\", "\\\\")  # a backslash is written \\ in AGX text
    assert evaluate(parse(f"matches(text, '{literal}')"), scope) is False
    assert evaluate(parse("matches(long, pattern)"), scope) is False


REFUSED = [
    (r"(a)\1", "a backreference"), (r"(?P<n>a)(?P=n)", "invalid perl operator"),
    (r"x(?=y)", "lookahead `(?=...)`"), (r"x(?!y)", "negative lookahead"),
    (r"(?<=x)y", "lookbehind `(?<=...)`"), (r"(?<!x)y", "negative lookbehind"),
    (r"(?>ab)c", "an atomic group"), (r"a++", "a possessive quantifier"),
    (r"a{2}+", "a possessive quantifier"), (r"(a)?(?(1)b|c)", "a conditional"),
    (r"a{1001}", "a counted repetition over 1000"),
]


@pytest.mark.parametrize(("pattern", "named"), REFUSED)
def test_a_construct_that_needs_backtracking_is_refused_by_name(pattern: str,
                                                               named: str) -> None:
    re.compile(pattern)  # Python takes it: it is refused, not invalid
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert caught.value.refused
    assert named in caught.value.reason
    assert "backtracking" in caught.value.reason
    assert "RE2 syntax" in caught.value.hint


def test_an_invalid_pattern_is_told_in_pythons_words() -> None:
    with pytest.raises(PatternError) as caught:
        compile_pattern("(")
    assert not caught.value.refused
    assert caught.value.reason == ("invalid regular expression '(': missing ), unterminated "
                                   "subpattern at position 0")


def test_limits_and_flags() -> None:
    with pytest.raises(PatternError, match="over 10000") as long:
        compile_pattern("a" * 10_001)
    assert long.value.refused
    with pytest.raises(PatternError, match="unknown regex flag 'g'"):
        compile_pattern("a", "g")
    with pytest.raises(PatternError, match="lone surrogate"):
        compile_pattern("\ud800")


@pytest.mark.parametrize(("pattern", "flags", "phrase", "about_flags"), [
    ("(", "", False, False),  # Python's own words: "... is not a valid regular expression: ..."
    ("a" * 10_001, "", True, False),  # "is 10001 characters long, ..."
    ("\ud800", "", True, False),  # "is not valid Unicode text ..."
    ("(?L)a", "", True, False),  # "uses the inline flag L ..."
    ("(a)\\1", "", True, False),  # "uses a backreference ..."
    ("a", "g", False, True),  # the flags are wrong, not the pattern
])
def test_the_error_says_how_its_detail_reads_as_fields_not_in_its_words(
        pattern: str, flags: str, phrase: bool, about_flags: bool) -> None:
    # Callers that name the pattern their way used to tell a phrase ("is ...", "uses ...")
    # from the parser's words by how the detail began, and the flags from the pattern by
    # whether detail was reason: both are fields now.
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern, flags)
    assert (caught.value.phrase, caught.value.flags) == (phrase, about_flags)


def test_a_literal_pattern_is_refused_when_the_expression_is_parsed() -> None:
    with pytest.raises(AgxSyntaxError) as caught:
        parse("matches(s, 'x(?=y)')")
    assert caught.value.code == "AG204"
    assert "lookahead" in caught.value.reason and caught.value.offset == 11
    assert "RE2 syntax" in (caught.value.hint or "")


def test_a_computed_pattern_is_refused_when_it_is_evaluated() -> None:
    scope = MappingScope({"s": "xy", "p": "x(?=y)"})
    with pytest.raises(AgxEvalError) as caught:
        evaluate(parse("matches(s, p)"), scope)
    assert (caught.value.code, caught.value.kind) == ("RT062", "pattern")
    assert "lookahead" in caught.value.reason


# Python's spellings that RE2 spells otherwise, each searched by both: the same answer.
SPELLED = [
    (r"^12$", "12\n"), (r"^12$", "12\n\n"), (r"a\Z", "a\n"), (r"a\Z", "a"),
    (r"\d+", "x٣٤"), (r"\w+$", "été"), (r"[\w-]+", "é-"), (r"\s", "\u2003"), (r"\S", " "),
    (r"\W", "é"), (r"\D", "٣"), (r"(?a)\w", "é"), (r"\u00e9", "é"),
    (r"\N{LATIN SMALL LETTER E WITH ACUTE}", "é"), (r"a{,2}b", "aab"), (r"(?#note)a", "a"),
    (r"(?x) a b  # a comment", "ab"), (r"(?x) a\ b", "a b"), (r"(?x)[ ]", " "),
    (r"(?x)a\#", "a#"), (r"[]a]", "]"), (r"[^]a]", "]"), (r"[$]", "$"), (r"(?m)^b$", "a\nb\nc"),
    (r"(?i)straße", "STRASSE"), (r"(?i)é", "É"), (r"(?s)a.b", "a\nb"), (r"a.b", "a\nb"),
]


@pytest.mark.parametrize(("pattern", "text"), SPELLED)
def test_pythons_spellings_mean_what_they_mean_in_python(pattern: str, text: str) -> None:
    assert (compile_pattern(pattern).search(text) is not None) == \
        (re.search(pattern, text) is not None)


def test_the_flags_of_a_criterion() -> None:
    assert compile_pattern("^VERSION", "im").search("first\nversion 2") is not None
    assert compile_pattern("first.version", "s").search("first\nversion") is not None
    assert compile_pattern("first \\n version  # spaced", "x").search("first\nversion")


def test_text_with_a_lone_surrogate_is_searched_with_character_offsets() -> None:
    assert compile_pattern("é(.)").search("aé\ud800x") == Found(start=1, end=3,
                                                                text="é\ud800")


# The differential property: on patterns of the supported syntax and short texts (short, so
# that Python's backtracking stays bounded), RE2 finds a match exactly when Python does.
ATOMS = st.sampled_from(["a", "b", "é", "1", "٣", " ", ".", r"\d", r"\w", r"\s", r"\D", r"\W",
                         r"\S", "[ab]", "[^a]", r"[\d ]", r"[\w-]", "^", "$", r"\Z", r"\A"])
QUANTIFIERS = st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "{2}", "{1,2}", "{,2}"])


@st.composite
def patterns(draw: Any, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.booleans()):
            inner = "|".join(draw(st.lists(patterns(depth + 1), min_size=1, max_size=2)))
            atom = draw(st.sampled_from(["({})", "(?:{})"])).format(inner)
        else:
            atom = draw(ATOMS)
        quantifier = draw(QUANTIFIERS) if atom not in ("^", "$", r"\Z", r"\A") else ""
        parts.append(atom + quantifier)
    return "".join(parts)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(pattern=patterns(), text=st.text(alphabet="ab1٣é \n-", max_size=8),
       flags=st.sampled_from(["", "i", "m", "s", "ms"]))
def test_rein_finds_a_match_exactly_when_python_does(pattern: str, text: str,
                                                     flags: str) -> None:
    python = re.compile(pattern, sum((getattr(re, f.upper()) for f in flags), 0))
    assert (compile_pattern(pattern, flags).search(text) is not None) == \
        (python.search(text) is not None), (pattern, text, flags)
