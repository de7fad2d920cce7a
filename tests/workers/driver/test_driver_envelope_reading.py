"""An envelope reads the same with or without the document loader.

``parse_envelope`` reads plain JSON itself and hands anything unusual (a duplicate key, a
non-finite or overlong number, deep nesting, a byte-order mark, a NUL, a surrogate escape) to
the loader, which decides and explains; a driver's ordinary envelope then never imports the
YAML parser.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rein.errors import LoadError
from rein.formats.loader import LoadLimits, load_text
from rein.workers.driver.protocol import (
    ENVELOPE_MAX_DEPTH,
    MAX_ENVELOPE_BYTES,
    EnvelopeRefused,
    parse_envelope,
)

LIMITS = LoadLimits(max_bytes=MAX_ENVELOPE_BYTES, max_depth=ENVELOPE_MAX_DEPTH)

ORDINARY = [
    '{"token": "drv-1", "status": "done", "outputs": {"module": "greet.py"}}',
    '{"a": [1, 2.5, -3e-7, true, false, null, "é\\u00e9\\ud83d\\ude00"], "b": {}}',
    '{"n": 12345678901234567890123456789012345678901234567890}',  # 50 digits
    '{"x": ' + "[" * 30 + "]" * 30 + "}",
]
UNUSUAL = [
    '{"a": 1, "a": 2}',  # a duplicate key
    '{"a": NaN}', '{"a": Infinity}', '{"a": 1e999}',  # not finite
    '{"n": ' + "9" * 101 + "}",  # over the loader's 100 digits
    '{"n": ' + "9" * 60 + "}",  # within them, but the loader decides near the bound
    '{"x": ' + "[" * 70 + "]" * 70 + "}",  # deeper than the limit
    '{"x": ' + "[" * 40 + "]" * 40 + "}",  # within it, but the loader decides
    '\ufeff{"a": 1}',  # a byte-order mark
    '{"a": "\x00"}',  # a NUL
    '{"a": "\\ud800"}', '{"\\udc00": 1}',  # a lone surrogate, not Unicode text
    '{"a": 1,}', "[1, 2]", '"text"',
]


def _loader(text: str) -> object:
    try:
        return load_text(text, source="envelope", format="json", limits=LIMITS).data
    except LoadError as exc:
        return ("refused", exc.kind)


def _ours(text: str) -> object:
    try:
        return parse_envelope(text)
    except EnvelopeRefused as exc:
        return ("refused", exc.code, str(exc))


@pytest.mark.parametrize("text", ORDINARY)
def test_plain_json_reads_as_the_loader_reads_it(text: str) -> None:
    assert parse_envelope(text) == _loader(text)


@pytest.mark.parametrize("text", UNUSUAL)
def test_anything_unusual_is_judged_by_the_loader(text: str) -> None:
    loader = _loader(text)
    ours = _ours(text)
    if isinstance(loader, dict):
        assert ours == loader
    else:
        assert ours[0] == "refused"


def test_a_duplicate_key_is_refused_with_the_loaders_reason() -> None:
    with pytest.raises(EnvelopeRefused, match="duplicate"):
        parse_envelope('{"token": "a", "token": "b"}')


def test_a_lone_surrogate_is_refused_with_the_loaders_reason() -> None:
    # It parses in Python, but no validator or store can take it as text.
    with pytest.raises(EnvelopeRefused, match="unpaired surrogate") as caught:
        parse_envelope('{"token": "a", "outputs": {"summary": "x\\ud800"}}')
    assert caught.value.code == "DRIVER_ENVELOPE"
    assert str(caught.value).encode("utf-8")  # the reason is printable


def test_an_ordinary_envelope_imports_no_document_loader() -> None:
    probe = ("import json, sys\n"
             "from rein.workers.driver.protocol import parse_envelope\n"
             "value = parse_envelope(sys.argv[1])\n"
             "print(json.dumps([value, 'rein.formats.loader' in sys.modules,"
             " 'yaml' in sys.modules]))\n")
    envelope = json.dumps({"token": "drv-1", "status": "done", "outputs": {"m": "x.py"}})
    out = subprocess.run([sys.executable, "-c", probe, envelope], check=True,
                         capture_output=True, text=True).stdout
    assert json.loads(out) == [json.loads(envelope), False, False]
