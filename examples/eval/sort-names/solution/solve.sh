#!/usr/bin/env bash
set -euo pipefail
LC_ALL=C sort names.txt > sorted.txt
echo '{"summary": "sorted.txt holds the sorted names"}'
