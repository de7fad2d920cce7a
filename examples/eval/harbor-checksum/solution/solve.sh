#!/bin/bash
set -euo pipefail
sha256sum data.txt | cut -d' ' -f1 > checksum.txt
