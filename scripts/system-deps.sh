#!/usr/bin/env bash
# The system packages some tests use. Never fails the build: a test whose package is missing
# skips with the reason. Installing needs consent: done where CI asks for it (CI=true, as CI
# services set it), or after a yes on a terminal; otherwise it says what is missing and how
# to install it, and goes on.
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
# The store suite's second store (scripts/postgres.sh starts a throwaway server).
{ ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; } \
  || want+=(postgresql)
[ ${#want[@]} -eq 0 ] && exit 0
how="sudo apt-get install ${want[*]}"
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: ${want[*]} not installed; the tests that need them will skip ($how)"
  exit 0
fi
case "${CI:-}" in
  true|1|yes) ;;  # CI asked for it
  *)
    answer=n
    if [ -t 0 ] && [ -t 1 ]; then
      printf 'system-deps: install %s with apt-get for the tests that use them? [y/N] ' \
        "${want[*]}"
      read -r answer || answer=n
    fi
    case "$answer" in
      y|Y|yes) ;;
      *)
        echo "system-deps: skipped installing ${want[*]}; the tests that need them will skip" \
             "(install them with \`$how\`, or run \`CI=true make system-deps\`)"
        exit 0 ;;
    esac ;;
esac
echo "system-deps: installing ${want[*]} (for the tests that use them)"
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}"; } \
  >/dev/null 2>&1 || echo "system-deps: could not install ${want[*]}: the tests that need them will skip"
exit 0
