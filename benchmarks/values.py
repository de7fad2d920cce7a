"""What an immutable value costs: rein's :class:`~rein.core.frozen.Frozen` beside a class written
out by hand (the idiom it replaced) and a ``@dataclass(frozen=True, kw_only=True, slots=True)``,
side by side in one run.

The same record of eight fields (three with a default, one made per instance) is declared
three ways, and each is timed for:

- building the class (what importing a module that declares it costs: a dataclass
  generates and compiles its methods here);
- constructing an instance with its required fields, and with all of them;
- reading a field, comparing two equal instances, hashing one (a hashable record of four
  fields), ``repr`` and a copy with one field changed.

Every row prints nanoseconds per operation (the best of ``--repeat`` runs, each timing a loop
of ``--number``) and its ratio to the hand-written class. Before timing, the three are checked
to agree: same fields, same equality and same repr, so the rows time the same work.

    .venv/bin/python benchmarks/values.py [--repeat 7] [--number 100000]
"""

from __future__ import annotations

import argparse
import dataclasses
import operator
import timeit
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from rein.core.frozen import Frozen, field

set_field = object.__setattr__


def _value_class() -> type:
    class Record(Frozen):
        run: str
        node: str
        attempt: int
        kind: str
        status: str = "ok"
        summary: str | None = None
        outputs: tuple[str, ...] = ()
        extra: Mapping[str, Any] = field(default_factory=dict)
    return Record


def _data_class() -> type:
    @dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
    class Record:
        run: str
        node: str
        attempt: int
        kind: str
        status: str = "ok"
        summary: str | None = None
        outputs: tuple[str, ...] = ()
        extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    return Record


def _hand_class() -> type:
    class Hand:
        """The idiom Frozen replaced: slots, annotations and an ``__init__`` written out."""

        __slots__ = ("attempt", "extra", "kind", "node", "outputs", "run", "status", "summary")
        run: str
        node: str
        attempt: int
        kind: str
        status: str
        summary: str | None
        outputs: tuple[str, ...]
        extra: Mapping[str, Any]

        def __init__(self, *, run: str, node: str, attempt: int, kind: str, status: str = "ok",
                     summary: str | None = None, outputs: tuple[str, ...] = (),
                     extra: Mapping[str, Any] | None = None) -> None:
            set_field(self, "run", run)
            set_field(self, "node", node)
            set_field(self, "attempt", attempt)
            set_field(self, "kind", kind)
            set_field(self, "status", status)
            set_field(self, "summary", summary)
            set_field(self, "outputs", outputs)
            set_field(self, "extra", {} if extra is None else extra)

        _names = ("run", "node", "attempt", "kind", "status", "summary", "outputs", "extra")

        def _values(self) -> tuple[Any, ...]:
            return tuple(getattr(self, name) for name in self._names)

        def __eq__(self, other: object) -> bool:
            if type(other) is not type(self):
                return NotImplemented
            assert isinstance(other, Hand)
            return self._values() == other._values()

        def __hash__(self) -> int:
            return hash(self._values())

        def __repr__(self) -> str:
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names)
            return f"Record({shown})"

        def replace(self, **changes: Any) -> Any:
            return type(self)(**{**dict(zip(self._names, self._values(), strict=True)), **changes})

        def __setattr__(self, name: str, value: Any) -> None:
            raise AttributeError(name)
    return Hand


def _call(cls: type, fields: dict[str, Any]) -> object:
    return cls(**fields)


def _replacer(value: Any) -> Callable[..., Any]:
    """``value.replace``, or ``dataclasses.replace`` bound to it for the dataclass."""
    if dataclasses.is_dataclass(value):
        return lambda **changes: dataclasses.replace(value, **changes)
    return value.replace  # type: ignore[no-any-return]


def _best(stmt: Callable[[], object], repeat: int, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number * 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=100_000)
    args = parser.parse_args()

    makers = {"hand-written": _hand_class, "Frozen": _value_class, "dataclass": _data_class}
    classes = {name: make() for name, make in makers.items()}
    required = {"run": "run-1", "node": "build", "attempt": 2, "kind": "task"}
    full = {**required, "status": "failed", "summary": "no", "outputs": ("a", "b"),
            "extra": {"k": 1}}
    hashable = {**required, "extra": ()}
    # the same work on every side, or the timings mean nothing
    shown = {repr(cls(**full)).split("(", 1)[1] for cls in classes.values()}
    assert len(shown) == 1, shown
    for cls in classes.values():
        assert cls(**full) == cls(**full) and cls(**required).extra == {}
        assert _replacer(cls(**full))(attempt=3).attempt == 3

    rows: list[tuple[str, dict[str, float]]] = []

    def row(label: str, stmt: Callable[[type], Callable[[], object]],
            number: int = args.number) -> None:
        rows.append((label, {name: _best(stmt(cls), args.repeat, number)
                             for name, cls in classes.items()}))
        print(_line(*rows[-1]), flush=True)

    print(f"{'ns per operation':34}" + "".join(f"{name:>22}" for name in classes))
    rows.append(("build the class", {
        name: _best(make, args.repeat, max(args.number // 100, 10))
        for name, make in makers.items()}))
    print(_line(*rows[-1]), flush=True)
    row("construct (4 required fields)", lambda cls: partial(_call, cls, required))
    row("construct (all 8 fields)", lambda cls: partial(_call, cls, full))
    row("read a field", lambda cls: partial(getattr, cls(**full), "attempt"))
    row("== (equal instances)", lambda cls: partial(operator.eq, cls(**full), cls(**full)))
    row("hash", lambda cls: partial(hash, cls(**hashable)))
    row("repr", lambda cls: partial(repr, cls(**full)))
    row("replace one field", lambda cls: partial(_replacer(cls(**full)), attempt=3))
    return 0


def _line(label: str, times: dict[str, float]) -> str:
    base = times["hand-written"]
    cells = "".join(f"{t:>12.0f} ({t / base:4.2f}x)" for t in times.values())
    return f"{label:34}{cells}"


if __name__ == "__main__":
    raise SystemExit(main())
