"""Which learned entries go first: the eviction order shared by writeback and prompt assembly.

Timestamps are compared as instants, not strings (``+02:00`` and ``Z`` mix correctly,
research J-22); an entry without any timestamp sorts first, so it is evicted first. Pinned
entries are never evicted automatically (T9).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, or None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _first_time(entry: dict[str, Any], *keys: str) -> datetime:
    for key in keys:
        moment = parse_time(entry.get(key))
        if moment is not None:
            return moment
    return _EPOCH


def eviction_key(entry: dict[str, Any], strategy: str) -> tuple[Any, ...]:
    """Sort key: entries that sort first are evicted first."""
    if strategy == "oldest":
        return (_first_time(entry, "learned_at", "opened_at"),)
    if strategy == "least_confident":
        confidence = entry.get("confidence")
        return (confidence if isinstance(confidence, (int, float)) else 1.0,)
    return (_first_time(entry, "last_used_at", "updated_at", "learned_at"),)


def eviction_order(entries: list[dict[str, Any]], strategy: str) -> list[int]:
    """Indexes of the non-pinned entries, first to evict first (stable on ties)."""
    candidates = [i for i, e in enumerate(entries) if not e.get("pinned")]
    return sorted(candidates, key=lambda i: eviction_key(entries[i], strategy))


def expired(entry: dict[str, Any], now: datetime, ttl_days: int | None) -> bool:
    """Whether an entry is past its ``expires_at``, or past ``learned_at`` + ``ttl_days``.

    The reference only checks ``expires_at``; rein also uses the TTL number, which is what
    ``fact_ttl_days`` says (research J-15). Pinned entries never expire automatically.
    """
    if entry.get("pinned") or ttl_days is None:
        return False
    expires = parse_time(entry.get("expires_at"))
    if expires is not None and expires < now:
        return True
    learned = parse_time(entry.get("learned_at"))
    return learned is not None and learned + timedelta(days=ttl_days) < now


def enforce(state: dict[str, Any], retention: dict[str, Any], now: datetime) -> list[str]:
    """Apply TTL, ``max_facts`` and ``max_open_threads`` to ``state`` in place.

    Returns a note per eviction. Open threads are never dropped to meet the cap (the
    reference silently does, J-15): only done or abandoned ones are, oldest first.
    """
    notes: list[str] = []
    strategy = retention.get("eviction", "least_recently_used")
    ttl = retention.get("fact_ttl_days")
    for collection in ("facts", "preferences"):
        entries = state.get(collection)
        if ttl is not None and isinstance(entries, list):
            kept = [e for e in entries if not expired(e, now, ttl)]
            for e in entries:
                if e not in kept:
                    notes.append(f"{collection} {e.get('id')!r} expired (fact_ttl_days {ttl})")
            state[collection] = kept
    cap = retention.get("max_facts")
    facts = state.get("facts")
    if cap is not None and isinstance(facts, list) and len(facts) > cap:
        order = eviction_order(facts, strategy)
        excess = len(facts) - cap
        drop = set(order[:excess])
        for i in sorted(drop):
            notes.append(f"fact {facts[i].get('id')!r} evicted ({strategy}, max_facts {cap})")
        state["facts"] = [e for i, e in enumerate(facts) if i not in drop]
        if len(state["facts"]) > cap:
            notes.append(f"{len(state['facts'])} facts remain over max_facts {cap}: pinned "
                         "entries are never evicted")
    cap = retention.get("max_open_threads")
    threads = state.get("open_threads")
    if cap is not None and isinstance(threads, list) and len(threads) > cap:
        closed = sorted((i for i, t in enumerate(threads)
                         if t.get("status") in ("done", "abandoned")),
                        key=lambda i: _first_time(threads[i], "updated_at", "opened_at"))
        drop = set(closed[:len(threads) - cap])
        for i in sorted(drop):
            notes.append(f"thread {threads[i].get('id')!r} ({threads[i].get('status')}) evicted "
                         f"(max_open_threads {cap})")
        state["open_threads"] = [t for i, t in enumerate(threads) if i not in drop]
        if len(state["open_threads"]) > cap:
            notes.append(f"{len(state['open_threads'])} threads remain over max_open_threads "
                         f"{cap}: open threads are never dropped automatically")
    return notes


def trim_history(history: list[Any], max_history: int) -> list[Any]:
    """The newest ``max_history`` entries (0 keeps none)."""
    return history[-max_history:] if max_history > 0 else []
