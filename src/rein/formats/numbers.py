"""Number literals the loader accepts, for JSON and YAML alike: finite, and not absurdly long.

Shared by :mod:`rein.formats.loader` and its YAML reader (:mod:`rein.formats.loader_yaml`),
which is imported only for YAML text.
"""

from __future__ import annotations

import math

from rein.errors import LoadError, Location

__all__ = ["MAX_INTEGER_BITS", "MAX_INTEGER_DIGITS", "BadNumber", "float_literal", "int_literal",
           "overflows", "too_deep", "too_long"]


class BadNumber(Exception):
    """A number literal that has no finite, exactly representable value."""

    def __init__(self, kind: str, message: str, literal: str, hint: str) -> None:
        self.kind, self.message, self.literal, self.hint = kind, message, literal, hint


# No document needs an integer this long: JSON interchange is exact to 2^53 (16 digits), and
# RFC 8785 digests refuse anything larger. The bound keeps every later step (digests,
# messages, Python's own 4,300-digit conversion limit) from failing on an absurd literal.
MAX_INTEGER_DIGITS = 100
MAX_INTEGER_BITS = 333  # 2^333 > 10^100: the same bound for hex and octal literals


def too_long(literal: str) -> BadNumber:
    return BadNumber(
        "bad_number", f"the integer {literal[:20]}… has more than {MAX_INTEGER_DIGITS} digits",
        literal, "no document needs such a number: write it as a string if it is an id",
    )


def overflows(literal: str) -> BadNumber:
    return BadNumber(
        "non_finite", f"the number {literal[:40]} is too large for a double (it would be "
        "infinite)", literal, "use a finite number or a string",
    )


def int_literal(literal: str) -> int:
    """``int(literal)`` for a decimal literal, refusing overlong ones before converting."""
    if len(literal) - (literal[0] in "+-") > MAX_INTEGER_DIGITS:
        raise too_long(literal)
    return int(literal)


def float_literal(literal: str) -> float:
    """``float(literal)``, refusing one that overflows to infinity (``1e999``)."""
    value = float(literal)
    if not math.isfinite(value):
        raise overflows(literal)
    return value


def too_deep(source: str, max_depth: int) -> LoadError:
    """The error of a document nested deeper than ``max_depth``."""
    return LoadError(
        f"the document nests deeper than {max_depth} levels",
        kind="too_deep", location=Location(file=source),
        hint="flatten the document, or raise [limits] max_depth in your own rein.toml",
    )
