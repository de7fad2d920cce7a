"""Provider errors with stable codes, and the one place vendor exceptions become them.

    ProviderError (rein.errors)         PROVIDER
    ├── ModelRequestsBlocked            PRV010  REIN_ALLOW_MODEL_REQUESTS=0 (tests)
    ├── ProviderAuthError               PRV001  401/403: the key is missing or wrong
    ├── ProviderRateLimited             PRV002  429: transient, retried with backoff
    ├── ProviderUnavailable             PRV003  5xx, overload, connection, timeout: transient
    ├── ProviderBadRequest              PRV004  400/404/413/422: the request itself is wrong
    └── ProviderResponseError           PRV005  the answer could not be understood

Every class carries ``failure_class`` (an AGS §14 class name, a plain string here because
providers sit below the workers) so the engine's failure ladder can decide on
retries; ``transient`` ones are retried by :mod:`rein.providers.retry` first. Messages never
contain an API key: :func:`vendor_errors` scrubs the values it is given.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rein.errors import ProviderError


class ModelRequestsBlocked(ProviderError):
    """A real model call was attempted while REIN_ALLOW_MODEL_REQUESTS=0."""

    default_code = "PRV010"
    failure_class = "model_error"


class ProviderAuthError(ProviderError):
    """The vendor refused the credentials."""

    default_code = "PRV001"
    failure_class = "model_error"


class ProviderRateLimited(ProviderError):
    """The vendor asked to slow down."""

    default_code = "PRV002"
    failure_class = "transient"


class ProviderUnavailable(ProviderError):
    """The vendor is down, overloaded, slow or unreachable."""

    default_code = "PRV003"
    failure_class = "transient"


class ProviderBadRequest(ProviderError):
    """The vendor rejected the request (unknown model, too long, invalid parameter)."""

    default_code = "PRV004"
    failure_class = "model_error"


class ProviderResponseError(ProviderError):
    """The vendor's answer was malformed or could not be mapped."""

    default_code = "PRV005"
    failure_class = "model_error"


def is_transient(exc: BaseException) -> bool:
    """Whether retrying the same request may succeed."""
    return getattr(exc, "failure_class", None) == "transient"


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``[secret]``."""
    from rein.formats.redaction import Secrets

    return Secrets.of(values=secrets).text(text)


def _from_status(status: int) -> type[ProviderError]:
    if status in (401, 403):
        return ProviderAuthError
    if status == 429:
        return ProviderRateLimited
    if status in (408, 409) or status >= 500:
        return ProviderUnavailable
    return ProviderBadRequest


_HINTS: dict[type[ProviderError], str] = {
    ProviderAuthError: "check the API key named by api_key_env in rein.toml (or the default "
    "variable for this provider) and that it may use this model",
    ProviderRateLimited: "wait, lower concurrency, or raise the provider's limits",
    ProviderUnavailable: "the provider is unreachable or overloaded; check base_url and retry",
    ProviderBadRequest: "check the model name and the request parameters for this provider",
    ProviderResponseError: "the provider returned something rein could not read",
}


@contextmanager
def vendor_errors(provider: str, *, errors: Any, secrets: Iterable[str] = ()) -> Iterator[None]:
    """Translate the SDK module ``errors``' exceptions into rein's, ``from exc``.

    ``errors`` is the SDK module (``openai`` or ``anthropic``): both expose ``APIStatusError``
    (with ``status_code``), ``APITimeoutError``, ``APIConnectionError``,
    ``APIResponseValidationError`` and ``APIError``.
    """
    hidden = tuple(s for s in secrets if s)
    try:
        yield
    except ProviderError:
        raise
    except errors.APIResponseValidationError as exc:
        raise _make(ProviderResponseError, provider, exc, hidden, status=exc.status_code) from exc
    except errors.APIStatusError as exc:
        cls = _from_status(exc.status_code)
        raise _make(cls, provider, exc, hidden, status=exc.status_code) from exc
    except errors.APITimeoutError as exc:
        raise _make(ProviderUnavailable, provider, exc, hidden, reason="timeout") from exc
    except errors.APIConnectionError as exc:
        raise _make(ProviderUnavailable, provider, exc, hidden, reason="connection") from exc
    except errors.APIError as exc:
        raise _make(ProviderResponseError, provider, exc, hidden) from exc


def _make(
    cls: type[ProviderError],
    provider: str,
    exc: BaseException,
    secrets: tuple[str, ...],
    **fields: Any,
) -> ProviderError:
    detail = scrub(str(exc) or type(exc).__name__, secrets)
    status = fields.get("status")
    prefix = f"{provider}: HTTP {status}: " if status else f"{provider}: "
    return cls(prefix + detail, hint=_HINTS.get(cls), provider=provider, **fields)
