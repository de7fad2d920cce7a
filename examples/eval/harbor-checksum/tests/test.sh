#!/bin/bash
# This task's verifier writes reward.json (a map of named rewards) instead of reward.txt.
expected=$(sha256sum /app/data.txt | cut -d' ' -f1)
if [ "$(tr -d ' \n' < /app/checksum.txt 2>/dev/null)" = "$expected" ]; then
  echo '{"reward": 1}' > /logs/verifier/reward.json
else
  echo "checksum.txt does not hold $expected"
  echo '{"reward": 0}' > /logs/verifier/reward.json
fi
