"""The two errors AGX raises, and how a character offset becomes "line 2, column 7".

``AgxSyntaxError`` is a document error (AG204): found at load time, before anything runs.
``AgxEvalError`` is a run error (the RT062 family): a well-formed expression met values it
cannot work with. Function bodies raise the internal :class:`Fault` without knowing where
they were called from; the evaluator adds the position and the expression text.
"""

from __future__ import annotations

from typing import Any

from rein.errors import DocumentError, RunError


def describe_position(text: str, offset: int) -> str:
    """``column 7`` for one-line text, ``line 2, column 3`` once the text spans lines.

    Columns are 1-based and count characters, as editors show them.
    """
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    column = offset - line_start + 1
    if "\n" not in text:
        return f"column {column}"
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {column}"


class AgxSyntaxError(DocumentError):
    """An expression or template that does not parse: bad syntax, an unknown function, or a
    call with the wrong number of arguments (AG204).

    ``offset`` is the 0-based character index of the problem in ``text``; ``reason`` is the
    message without its position, so a template can re-anchor an error found in one of its
    interpolations.
    """

    default_code = "AG204"

    def __init__(self, reason: str, *, offset: int, text: str, hint: str | None = None,
                 suffix: str = "", **kwargs: Any) -> None:
        message = f"{reason} at {describe_position(text, offset)}{suffix}"
        super().__init__(message, hint=hint, offset=offset, text=text, **kwargs)
        self.reason = reason
        self.suffix = suffix
        self.offset = offset
        self.text = text


class AgxEvalError(RunError):
    """An expression that parsed but could not be evaluated with the values at hand.

    ``kind`` names the family: ``type`` (wrong operand or argument type), ``name`` (unknown
    root name or node), ``arithmetic`` (division by zero, overflow), ``conversion`` (``int``,
    ``float``, ``bool``, ``json`` failed), ``pattern`` (bad regular expression), ``limit``
    (a value too deep to work with). The message names the column and quotes short
    expressions, because it ends up in run records far from the document.
    """

    default_code = "RT062"

    def __init__(self, reason: str, *, offset: int, text: str, kind: str,
                 hint: str | None = None, **kwargs: Any) -> None:
        message = f"{reason} at {describe_position(text, offset)}"
        if len(text) <= 80 and "\n" not in text:
            message += f" of `{text}`"
        super().__init__(message, hint=hint, offset=offset, text=text, kind=kind, **kwargs)
        self.reason = reason
        self.offset = offset
        self.text = text
        self.kind = kind


class Fault(Exception):
    """Raised inside operators and functions; the evaluator turns it into AgxEvalError."""

    def __init__(self, message: str, *, kind: str = "type", hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.hint = hint
