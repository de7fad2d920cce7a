#!/bin/bash
# Harbor's verifier: reads the agent's work and writes the reward; its exit code is ignored.
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, world!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "hello.txt is missing or wrong: $(head -c 200 /app/hello.txt 2>/dev/null)"
  echo 0 > /logs/verifier/reward.txt
fi
