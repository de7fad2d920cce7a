"""Secret redaction: the one pass that every stored or printed value goes through.

A *known secret* is the value of a ``REIN_SECRET_<NAME>`` variable (shown as the AGS binding
name, lower-cased) or of an environment variable that holds a provider key: the built-in
providers' default variables and every ``api_key_env`` a ``[providers.NAME]`` table names.
:func:`redact` replaces each occurrence of each known value, inside any string of any nested
JSON-like value (mapping keys included), with ``[secret:NAME]``. The store applies it to every
event, node record, run summary, approval and driver turn it writes; workers, criteria and
the command line apply the same function to what they show.

Values shorter than :data:`MIN_LENGTH` are not redacted: a one-letter "secret" would rewrite
every word that contains the letter, and no real key is that short. Redaction is by exact
value: a secret that a worker transforms (base64, split in two, reversed) is not recognised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rein.core.frozen import Frozen

TYPE_CHECKING = False  # not typing's: a driver turn imports no `typing` (rein.cli)
if TYPE_CHECKING:
    from typing import Any

SECRET_PREFIX = "REIN_SECRET_"
#: The variable each built-in provider kind reads its key from when ``api_key_env`` is unset.
DEFAULT_KEY_VARIABLES: Mapping[str, str] = {"openai": "OPENAI_API_KEY",
                                            "anthropic": "ANTHROPIC_API_KEY"}
MIN_LENGTH = 4


def marker(name: str | None) -> str:
    """What a secret is replaced with: ``[secret:NAME]``, or ``[secret]`` without a name."""
    return f"[secret:{name}]" if name else "[secret]"


class Secrets(Frozen, kw_only=False):
    """Known secret values, each with the name it is shown as; longest value first, so a
    secret that contains another is replaced whole."""

    pairs: tuple[tuple[str, str | None], ...] = ()  # (value, name)

    @classmethod
    def of(cls, named: Mapping[str, str] | None = None,
           values: Iterable[str] = ()) -> Secrets:
        """From ``{name: value}`` and from bare values (shown as ``[secret]``)."""
        if not named and not values:
            return NO_SECRETS
        pairs: list[tuple[str, str | None]] = [
            (v, n) for n, v in (named or {}).items() if isinstance(v, str)]
        pairs += [(v, None) for v in values if isinstance(v, str)]
        return cls._build(pairs)

    @classmethod
    def _build(cls, pairs: Iterable[tuple[str, str | None]]) -> Secrets:
        by_value: dict[str, str | None] = {}
        for value, name in pairs:
            if len(value) >= MIN_LENGTH and by_value.get(value) is None:
                by_value[value] = name  # a named entry wins over a bare one
        ordered = sorted(by_value.items(), key=lambda p: (-len(p[0]), p[0]))
        return cls(tuple(ordered))

    def __or__(self, other: Secrets) -> Secrets:
        if not other.pairs:  # the union with nothing: no new set to sort
            return self
        if not self.pairs:
            return other
        return Secrets._build((*self.pairs, *other.pairs))

    def __bool__(self) -> bool:
        return bool(self.pairs)

    @property
    def values(self) -> frozenset[str]:
        return frozenset(v for v, _ in self.pairs)

    def text(self, text: str) -> str:
        """``text`` with every known value replaced by its marker."""
        for value, name in self.pairs:
            if value in text:
                text = text.replace(value, marker(name))
        return text


NO_SECRETS = Secrets()


def secrets_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """``REIN_SECRET_<NAME>`` → ``{name: value}`` (names lower-cased as AGS binds them)."""
    return {k[len(SECRET_PREFIX):].lower(): v for k, v in env.items()
            if k.startswith(SECRET_PREFIX)}


def known_secrets(env: Mapping[str, str], key_variables: Iterable[str] = ()) -> Secrets:
    """The secrets of an environment: every ``REIN_SECRET_*`` value, and the value of every
    provider key variable (the built-in defaults and ``key_variables``)."""
    named = secrets_from_env(env)
    for variable in (*DEFAULT_KEY_VARIABLES.values(), *key_variables):
        if env.get(variable):
            named.setdefault(variable, env[variable])
    return Secrets.of(named)


def provider_key_variables(providers: Any) -> tuple[str, ...]:
    """The key variables a ``[providers]`` table names (``api_key_env``, else the kind's
    default), malformed entries skipped: this runs before the table is validated."""
    out: list[str] = []
    for name, spec in (providers.items() if isinstance(providers, Mapping) else ()):
        if not isinstance(spec, Mapping):
            continue
        variable = spec.get("api_key_env") or DEFAULT_KEY_VARIABLES.get(
            str(spec.get("kind", name)))
        if isinstance(variable, str) and variable not in out:
            out.append(variable)
    return tuple(out)


def redact(value: Any, secrets: Secrets) -> Any:
    """``value`` with every known secret replaced, in every string at any depth (mapping
    keys too). Anything that is not a string, mapping, list or tuple is returned as is."""
    if not secrets:
        return value
    if isinstance(value, str):
        return secrets.text(value)
    if isinstance(value, Mapping):
        return {(secrets.text(k) if isinstance(k, str) else k): redact(v, secrets)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, secrets) for v in value]
    return value


__all__ = ["DEFAULT_KEY_VARIABLES", "MIN_LENGTH", "NO_SECRETS", "SECRET_PREFIX", "Secrets",
           "known_secrets", "marker", "provider_key_variables", "redact", "secrets_from_env"]
