#!/usr/bin/env bash
# Best-effort install of the system packages some tests use. Never fails the build: a test
# whose package is missing skips with the reason.
set -u
want=()
command -v bwrap >/dev/null 2>&1 || want+=(bubblewrap)
command -v dot >/dev/null 2>&1 || want+=(graphviz)  # rein graph plan --format svg
# The web console's end-to-end tests drive Debian's Chromium through Playwright.
[ -x /usr/bin/chromium ] || want+=(chromium)
# Claude Code's sandbox needs socat and ripgrep beside bubblewrap (tests/agents,
# tests/cli/test_approvals_confined.py).
command -v socat >/dev/null 2>&1 || want+=(socat)
command -v rg >/dev/null 2>&1 || want+=(ripgrep)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${want[*]} (for the tests that use them)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}"; } \
    >/dev/null 2>&1 || echo "could not install ${want[*]}: the tests that need it will skip"
else
  echo "note: ${want[*]} not installed; the tests that need it will skip"
fi
exit 0
