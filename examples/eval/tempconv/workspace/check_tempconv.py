"""The brief's verify command: exits 0 when tempconv.py does what the brief asks."""

import sys

try:
    from tempconv import c_to_f, f_to_c
except ImportError as exc:
    sys.exit(f"tempconv.py is missing or incomplete: {exc}")

assert c_to_f(100) == 212, c_to_f(100)
assert c_to_f(-40) == -40, c_to_f(-40)
assert f_to_c(32) == 0, f_to_c(32)
assert abs(f_to_c(98.6) - 37) < 1e-9, f_to_c(98.6)
print("tempconv: 4 checks passed")
