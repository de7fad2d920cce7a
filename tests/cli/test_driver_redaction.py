"""Secrets in a driver's envelope are stored and printed redacted: outputs, messages, the
problems of a refused envelope, the events, the record (on every store kind)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.test_driver_commands import RIGHT, Drive, drive  # noqa: F401 - the fixture
from tests.store.conftest import pg_url, store_url  # noqa: F401 - the fixtures

TOKEN = "ghp_DriverLeak0123456789abcd"
KEY = "sk-proj-DriverLeak-9876543210"


@pytest.fixture
def secret_drive(drive: Drive, monkeypatch: pytest.MonkeyPatch) -> Drive:  # noqa: F811
    monkeypatch.setenv("REIN_SECRET_DEPLOY_TOKEN", TOKEN)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return drive


def everything(driver: Drive) -> str:
    """What rein shows and keeps about the run: events, record, the next status."""
    run_id = driver.run_id()
    _, events = driver.rein("runs", "events", run_id, "--json")
    _, record = driver.rein("runs", "record", run_id)
    _, status = driver.rein("next", "--json")
    _, text = driver.rein("next")
    return f"{events}\n{record}\n{status}\n{text}"


def test_an_envelope_with_secrets_is_stored_and_printed_redacted(secret_drive: Drive,
                                                                 capsys: Any) -> None:
    driver = secret_drive
    assert driver.start()[0] == 3
    driver.write("greet.py", RIGHT)
    envelope = driver.envelope(message=f"deployed with {TOKEN} and {KEY}")
    code, answered = driver.submit(envelope)
    assert code == 3
    shown = json.dumps(answered) + everything(driver)
    assert TOKEN not in shown and KEY not in shown
    from rein.store.open import open_store

    store = open_store(driver.root, url=driver.store)
    try:
        [turn] = store.driver_turns(driver.run_id())
        raw = repr(store._x("SELECT * FROM driver_turns").fetchall())
        raw += repr(store._x("SELECT * FROM events").fetchall())
    finally:
        store.close()
    assert TOKEN not in raw and KEY not in raw
    assert turn.answer["envelope"]["message"] == (
        "deployed with [secret:deploy_token] and [secret:OPENAI_API_KEY]")
    # The same envelope again is recognised as applied, though it was stored redacted.
    code, again = driver.submit(envelope)
    assert "already applied" in again["submitted"]


def test_a_refused_envelope_does_not_echo_its_secrets(secret_drive: Drive,
                                                      capsys: Any) -> None:
    driver = secret_drive
    assert driver.start()[0] == 3
    envelope = driver.envelope(outputs={"module": 7, KEY: TOKEN}, message=TOKEN)
    (driver.root / ".rein" / "inbox.json").write_text(json.dumps(envelope))
    capsys.readouterr()
    from rein.cli import main

    code = main(["submit", "--store", driver.store])
    shown = capsys.readouterr()
    assert code == 4
    assert TOKEN not in shown.out + shown.err and KEY not in shown.out + shown.err
    code, refused = driver.submit(envelope)
    assert code == 4 and refused["status"] == "refused" and refused["problems"]
    assert TOKEN not in json.dumps(refused) and KEY not in json.dumps(refused)
