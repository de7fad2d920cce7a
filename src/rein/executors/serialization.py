"""What DBOS writes and reads for rein: JSON text, never a Python pickle.

DBOS's default serializer is ``pickle``, and when it reads a row it picks the deserializer
from the row's own ``serialization`` column: ``py_pickle`` means ``pickle.loads``, whatever
serializer the process was configured with. Anyone who can write to the database could so
make a worker (claiming a job) or a coordinator (reading an answer) run code of their
choosing before rein sees anything. :func:`json_only` closes that in this process:

- both sides configure DBOS's portable JSON serializer, so rein writes no pickle (a job is
  one string, its answer another);
- DBOS's pickle deserializer is replaced by one that refuses (``SCALE011``): DBOS then
  records the row as ``ERROR`` and runs nothing.

It patches one method of DBOS's default serializer class, so it checks first that the
installed dbos has the shape this was written for (the scale extra pins ``dbos>=3.4,<3.5``)
and refuses to go on otherwise (``SCALE005``): a worker that could unpickle rows does not
start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rein.core.extras import install_hint
from rein.errors import ConfigError, RunError

_SAID: list[Callable[[str], None]] = []  # who hears of a refused row (the worker's log)


def refuse_pickle(_self: Any, serialized_data: str) -> Any:
    """DBOS's pickle deserializer, turned off: nothing of the row is decoded."""
    error = RunError(f"a queue row holds a Python pickle ({len(serialized_data or '')} "
                     "characters): never decoded, nothing run", code="SCALE011",
                     hint="rein writes its jobs and answers as JSON; a pickled row was "
                          "written by something else with access to the database")
    for say in _SAID:
        say(f"refused a job: {error}")
    raise error


def json_only(say: Callable[[str], None] | None = None) -> Any:
    """Refuse pickled rows in this process from now on; the serializer to configure DBOS
    (and its client) with. ``say``: where a refused row is reported."""
    try:
        from dbos import _serialization as ser
    except ImportError as exc:
        raise _unshaped(str(exc)) from exc
    default = getattr(ser, "DefaultSerializer", None)
    portable = getattr(ser, "DBOSPortableJSON", None)
    if default is None or portable is None or not callable(getattr(default, "deserialize",
                                                                   None)) \
            or default().name() != "py_pickle" or portable.name() != "portable_json":
        raise _unshaped("its serializers are not the ones expected")
    setattr(default, "deserialize", refuse_pickle)  # noqa: B010 - a class attribute, on purpose
    if say is not None and say not in _SAID:
        _SAID.append(say)
    return portable


def _unshaped(why: str) -> ConfigError:
    return ConfigError(f"this dbos cannot be kept from unpickling queue rows ({why})",
                       code="SCALE005", hint=f"{install_hint('scale')} (dbos>=3.4,<3.5)")


__all__ = ["json_only", "refuse_pickle"]
