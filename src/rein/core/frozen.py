"""Immutable value classes written out by hand, for the modules every command imports.

``@dataclass(frozen=True, slots=True)`` builds each class by generating and compiling code
when its module is imported (and builds it twice for the slots), and importing
``dataclasses`` pulls in ``inspect``, ``ast`` and ``dis``. A driver turn (``rein next``) is a
fresh process whose own work is a few queries, so on its path and on ``rein graph
validate``'s, value classes are written out: a subclass lists its fields in ``__slots__``,
annotates them, and sets them in a keyword-only ``__init__`` with :func:`set_field`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

__all__ = ["Frozen", "set_field"]

set_field = object.__setattr__  # how ``__init__`` sets a field of a frozen instance


class Frozen:
    """An immutable value compared, hashed and shown by its fields, as a frozen dataclass."""

    __slots__: ClassVar[tuple[str, ...]] = ()  # a subclass's fields, in order

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in their order (``dataclasses.asdict``, one level deep)."""
        return dict(zip(self.__slots__, self._values(), strict=True))

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return type(self)(**{**dict(zip(self.__slots__, self._values(), strict=True)),
                             **changes})

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Frozen)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle without __setattr__
        return (_rebuild, (type(self), dict(zip(self.__slots__, self._values(), strict=True))))


def _rebuild(cls: type[Any], fields: dict[str, Any]) -> Any:
    return cls(**fields)
