"""An output path an agent sends is data, not a file name rein can always ask about: a NUL
byte in it is an invalid output with the reason, not a traceback."""

from __future__ import annotations

import json
from typing import Any

from tests.cli.test_driver_commands import RIGHT, Drive, drive  # noqa: F401 - the fixture
from tests.store.conftest import pg_url, store_url  # noqa: F401 - the fixtures


def test_a_nul_byte_in_an_output_path_is_an_invalid_output(drive: Drive, capsys: Any  # noqa: F811
                                                          ) -> None:
    drive.start()
    drive.write("greet.py", RIGHT)
    code, status = drive.submit(drive.envelope(outputs={"module": "greet.py\u0000.txt"}))
    assert "Traceback" not in capsys.readouterr().err
    # Refused at submit (4) or failing the node (1), the answer names the reason: RT031.
    assert code in (1, 4)
    reason = "output 'module' names 'greet.py\\\\x00.txt', which contains a NUL byte"
    assert reason in json.dumps(status)
