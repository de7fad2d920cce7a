"""Reading loaded documents whose shape the schema has already judged.

Validation reports a block of the wrong type once; the code that reads a document afterwards
only needs "this block, or nothing", typed, so it never trips over the bad value again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mapping_of(value: object) -> Mapping[str, Any]:
    """``value`` when it is an object (documents have string keys), else an empty one."""
    return value if isinstance(value, Mapping) else {}


def sequence_of(value: object) -> list[Any]:
    """``value`` when it is an array, else an empty one."""
    return value if isinstance(value, list) else []
