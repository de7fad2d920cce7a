#!/usr/bin/env bash
set -euo pipefail
cat > tempconv.py <<'PY'
"""Temperature conversions."""


def c_to_f(c):
    return c * 9 / 5 + 32


def f_to_c(f):
    return (f - 32) * 5 / 9
PY
echo '{"summary": "tempconv.py with c_to_f and f_to_c"}'
