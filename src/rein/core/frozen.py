"""Immutable values: the one idiom of rein for a record of named, typed fields.

A subclass of :class:`Frozen` annotates its fields, as a dataclass does, and gets a keyword-only
``__init__`` (defaults from the class body, :func:`field` for a default made per instance),
``__slots__``, equality and hashing by its fields, ``__repr__``, :meth:`Frozen.replace` and
:meth:`Frozen.as_dict`; its instances cannot be changed. The class is built when its module is
imported, from the annotations as written (strings, under ``from __future__ import
annotations``) and by closures over the field names: no source is generated or compiled.

That is why rein has this and not ``@dataclass(frozen=True, slots=True)`` for its values: a
dataclass compiles generated code for each class at import (twice with slots), and importing
``dataclasses`` pulls in ``inspect``, ``ast`` and ``dis``, while a driver turn (``rein next``)
is a fresh process whose own work is a few queries. ``typing.dataclass_transform`` tells type
checkers that the class behaves as a frozen, keyword-only dataclass, so they check the
generated ``__init__`` as they would a dataclass's.

    class Edge(Frozen):
        source: str
        target: str
        label: str | None = None
        notes: Mapping[str, str] = field(default_factory=dict)

``class Point(Frozen, kw_only=False)`` also takes its fields by position, in their order. A
``__post_init__(self)`` runs after the fields are set, and may normalise one with
:func:`set_field`. A subclass adds fields after those of its base (it may give a base's field a
new default). A class of its own ``__init__`` or ``__slots__`` is refused: one idiom.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from operator import attrgetter

__all__ = ["MISSING", "Frozen", "Record", "field", "maker", "required", "set_field"]

# `typing` is for the type checker only: every module imports this one, and a driver turn
# (`rein next`) imports no `typing` at all. What it would run here does nothing at run time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, Self, TypeVar, dataclass_transform, overload

    _T = TypeVar("_T")
else:
    def dataclass_transform(**_: object) -> object:
        return lambda cls: cls

set_field = object.__setattr__  # how ``__post_init__`` sets a field of a frozen instance


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default: the field must be given


class _Field:
    """What :func:`field` returns, read once when the class is built."""

    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Any) -> None:
        self.default = default
        self.default_factory = default_factory


if TYPE_CHECKING:
    @overload
    def field(*, default: _T) -> _T: ...
    @overload
    def field(*, default_factory: Callable[[], _T]) -> _T: ...
def field(*, default: Any = MISSING, default_factory: Any = MISSING) -> Any:
    """A field's default (``default_factory`` is called for each instance that omits it)."""
    if (default is MISSING) == (default_factory is MISSING):
        raise TypeError("field() takes one of default and default_factory")
    return _Field(default, default_factory)


def required(cls: type) -> tuple[str, ...]:
    """The fields of a value class that have no default: what its ``__init__`` must be given."""
    spec: _Spec = vars(cls)["_spec"]
    return tuple(name for name in spec.names if name not in spec.defaults)


def maker(cls: type[_T]) -> Callable[..., _T]:
    """A constructor of ``cls`` that takes every field by position, in order, and nothing
    else: for a value built thousands of times a second (an event of the store's write
    path), where the keyword ``__init__``'s checks are most of the cost. It refuses any other
    number of values; it does not apply defaults, so it is for a class whose every field is
    always given, and a class with a ``__post_init__`` is refused."""
    spec: _Spec = vars(cls)["_spec"]
    if getattr(cls, "__post_init__", None) is not None:
        raise TypeError(f"{cls.__qualname__} has a __post_init__: build it with its __init__")
    puts = tuple(getattr(cls, name).__set__ for name in spec.names)
    count = len(puts)
    new = object.__new__
    qualname = cls.__qualname__

    def make(*values: Any) -> _T:
        if len(values) != count:
            raise TypeError(f"{qualname}: {count} values expected, {len(values)} given")
        value = new(cls)
        # As many of each (checked above): zip's keyword alone costs a fifth of the call.
        for put, one in zip(puts, values):  # noqa: B905
            put(value, one)
        return value

    return make


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))


def _annotations(namespace: dict[str, Any]) -> dict[str, Any]:
    if "__annotations__" in namespace:
        return dict(namespace["__annotations__"])
    annotate = namespace.get("__annotate__")  # Python 3.14 (PEP 649): strings still, with
    return dict(annotate(1)) if annotate is not None else {}  # the __future__ import


class _Spec:
    """A class's fields: what its generated methods close over."""

    __slots__ = ("defaults", "names", "positional")

    def __init__(self, names: tuple[str, ...], defaults: dict[str, _Field],
                 positional: tuple[str, ...]) -> None:
        self.names = names  # every field, the base's first, in the order declared
        self.defaults = defaults  # name -> its default, for the fields that have one
        self.positional = positional  # the fields also taken by position


class _FrozenMeta(type):
    """Builds a value class's slots and methods from its annotations."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                *, kw_only: bool = True, eq: bool = True, **kwargs: Any) -> _FrozenMeta:
        if "_spec" in namespace:  # a root: Frozen, Record and what they share
            return super().__new__(mcls, name, bases, namespace, **kwargs)
        base_specs = [vars(b)["_spec"] for b in bases if isinstance(b, _FrozenMeta)]
        for own in ("__init__", "__slots__"):
            if own in namespace:
                raise TypeError(f"{name}: a value class has no {own} of its own; annotate "
                                "its fields (and normalise one in __post_init__)")
        if not eq:  # compared and hashed as the object it is, as dataclass(eq=False)
            namespace.setdefault("__eq__", object.__eq__)
            namespace.setdefault("__hash__", object.__hash__)
        inherited = base_specs[0]
        names = list(inherited.names)
        defaults = dict(inherited.defaults)
        positional = list(inherited.positional)
        own_fields = []
        for field_name, annotation in _annotations(namespace).items():
            if _is_classvar(annotation):
                continue
            if field_name not in names:
                names.append(field_name)
                own_fields.append(field_name)
                if not kw_only:
                    positional.append(field_name)
            if field_name in namespace:
                value = namespace.pop(field_name)
                defaults[field_name] = value if isinstance(value, _Field) else _Field(
                    value, MISSING)
        for before, after in pairwise(positional):
            if before in defaults and after not in defaults:
                raise TypeError(f"{name}: field {after!r} without a default follows "
                                f"{before!r}, which has one, in the positional fields")
        namespace["__slots__"] = tuple(own_fields)
        namespace["__match_args__"] = tuple(positional)
        namespace["_get"] = staticmethod(_getter(tuple(names)))
        cls: Any = super().__new__(mcls, name, bases, namespace, **kwargs)
        spec = _Spec(tuple(names), defaults, tuple(positional))
        cls._spec = spec
        cls.__fields__ = spec.names
        cls.__init__ = _init(cls, spec)
        return cls  # type: ignore[no-any-return]

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                 *, kw_only: bool = True, eq: bool = True, **kwargs: Any) -> None:
        super().__init__(name, bases, namespace, **kwargs)


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """What gives an instance's fields as a tuple (one C call where there are several)."""
    if not names:
        return lambda value: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return attrgetter(*names)


def _init(cls: type, spec: _Spec) -> Any:
    """The ``__init__`` of ``cls``: each field from the keywords, its default or its
    factory, set through its slot; then ``__post_init__`` where the class has one."""
    plan = []
    for name in spec.names:
        default = spec.defaults.get(name, _Field(MISSING, MISSING))
        make = None if default.default_factory is MISSING else default.default_factory
        plan.append((name, getattr(cls, name).__set__, default.default, make))
    steps = tuple(plan)
    post = getattr(cls, "__post_init__", None)
    qualname = cls.__qualname__
    positional = spec.positional

    def by_keyword(self: Any, /, **given: Any) -> None:
        pop = given.pop  # ``given`` is this call's own dict
        for name, put, default, make in steps:
            value = pop(name, default)
            if value is MISSING:
                if make is None:
                    raise _missing(qualname, steps, name, given)
                value = make()
            put(self, value)
        if given:
            raise TypeError(f"{qualname}.__init__() got an unexpected keyword argument "
                            f"{next(iter(given))!r}")
        if post is not None:
            post(self)

    def by_position(self: Any, /, *args: Any, **given: Any) -> None:
        if len(args) > len(positional):
            raise TypeError(f"{qualname}.__init__() takes {len(positional) + 1} positional "
                            f"arguments but {len(args) + 1} were given")
        for name, value in zip(positional, args, strict=False):
            if name in given:
                raise TypeError(f"{qualname}.__init__() got multiple values for argument "
                                f"{name!r}")
            given[name] = value
        by_keyword(self, **given)

    init = by_position if positional else by_keyword
    init.__name__, init.__qualname__ = "__init__", f"{qualname}.__init__"
    return init


def _missing(qualname: str, plan: tuple[Any, ...], first: str,
             given: dict[str, Any]) -> TypeError:
    names = [name for name, _, default, make in plan
             if default is MISSING and make is None]
    after = names[names.index(first):]  # those before it were given
    missing = [first, *(n for n in after[1:] if n not in given)]
    listed = " and ".join(repr(n) for n in missing) if len(missing) < 3 else (
        ", ".join(repr(n) for n in missing[:-1]) + f" and {missing[-1]!r}")
    plural = "argument" if len(missing) == 1 else "arguments"
    return TypeError(f"{qualname}.__init__() missing {len(missing)} required {plural}: "
                     f"{listed}")


class _Fields(metaclass=_FrozenMeta):
    """What :class:`Frozen` and :class:`Record` share: fields compared and shown in order."""

    __slots__ = ()
    __fields__: ClassVar[tuple[str, ...]] = ()  # every field, in order
    _spec: ClassVar[_Spec] = _Spec((), {}, ())

    @staticmethod
    def _get(value: Any) -> tuple[Any, ...]:  # the fields' values (each class has its own)
        return ()

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in their order (``dataclasses.asdict``, one level deep)."""
        return dict(zip(self.__fields__, self._get(self), strict=True))

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied (``dataclasses.replace``)."""
        return type(self)(**{**self.as_dict(), **changes})

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._get(self) == self._get(other)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}"
                          for name, value in zip(self.__fields__, self._get(self), strict=True))
        return f"{type(self).__qualname__}({shown})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle through __init__
        return (_rebuild, (type(self), self.as_dict()))


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(field,))
class Frozen(_Fields):
    """An immutable value compared, hashed and shown by its fields, as a frozen dataclass."""

    __slots__ = ()
    _spec: ClassVar[_Spec] = _Spec((), {}, ())

    def __hash__(self) -> int:
        return hash(self._get(self))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")



@dataclass_transform(kw_only_default=True, field_specifiers=(field,))
class Record(_Fields):
    """State that changes in place (a run's node states, a tracker), built as :class:`Frozen`
    is; compared by its fields and so not hashable, as a dataclass (``eq=False``: by
    identity, and hashable)."""

    __slots__ = ()
    _spec: ClassVar[_Spec] = _Spec((), {}, ())
    __hash__ = None  # type: ignore[assignment]


def _rebuild(cls: type[Any], fields: dict[str, Any]) -> Any:
    return cls(**fields)
