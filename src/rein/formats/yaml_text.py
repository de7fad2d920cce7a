"""YAML that rein's own loader reads back as it was written.

PyYAML's safe dumper quotes the strings YAML 1.1 would read as something else; rein reads
YAML by the 1.2 core schema (:mod:`rein.formats.loader_yaml`), where ``18e4923`` (a short
commit id), ``1e3`` or ``0o17`` are numbers. Written plain, such a string comes back as a
number, or as an error when it overflows a double. Every YAML document rein writes for its
own loader goes through :func:`dump`, which quotes those forms too.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["Dumper", "dump"]

# A string that starts like a number and has only the characters of YAML 1.2 numbers
# (digits, signs, dots, exponents, 0o/0x prefixes, hex digits, .inf/.nan): quoted, so that
# none of them is read back as a number. Quoting more than needed costs two characters.
_NUMBERISH = re.compile(r"[-+]?(?:[0-9.]|\.(?:inf|Inf|INF|nan|NaN|NAN))[0-9a-fA-FoxX._:eE+-]*\Z")
# The words YAML 1.2 reads as null or a boolean. PyYAML quotes them too, by its resolvers'
# table, but that table is one per process and a library may edit it (one pops the
# resolvers of words starting with y, n and o, and "null" goes with them).
_WORDS = frozenset({"~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False",
                    "FALSE"})
# The line breaks YAML knows besides \n and \r. PyYAML writes them as they are in a plain,
# single-quoted or block scalar, where a reader folds them (NEL comes back a space); only a
# double-quoted scalar escapes them (\N, \L, \P).
_BREAKS = re.compile("[\x85\u2028\u2029]")


class Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper with YAML 1.2 quoting of number-like strings."""

    block_text = False  # subclasses set True to write multi-line strings as `|` blocks


def _represent_str(dumper: Dumper, value: str) -> Any:
    breaks = _BREAKS.search(value) is not None
    if dumper.block_text and "\n" in value and value == value.rstrip(" ") \
            and "\t" not in value and not breaks:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if not value or value in _WORDS or _NUMBERISH.match(value) or value != value.strip() \
            or breaks:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


Dumper.add_representer(str, _represent_str)


def dump(data: Any, *, width: int = 96, dumper: type[Dumper] = Dumper) -> str:
    """``data`` as YAML text, keys in their order, that rein's loader reads back as ``data``."""
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=width,
                     default_flow_style=False)
