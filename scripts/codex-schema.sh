#!/usr/bin/env bash
# Regenerate the Codex app-server JSON Schema fixture the app-server tests validate every
# message rein sends against: the whole bundle `codex app-server generate-json-schema`
# writes (codex_app_server_protocol.schemas.json), byte for byte. Needs the `codex` binary
# of the pinned version (the `openai-codex-cli-bin` wheel); where that is installed,
# tests/appserver/test_codex_schema_fixture.py regenerates it and compares.
#
#   scripts/codex-schema.sh [path/to/codex]
set -euo pipefail
VERSION=0.163.0
OUT="$(cd "$(dirname "$0")/.." && pwd)/tests/appserver/fixtures/codex-$VERSION"
CODEX="${1:-}"
if [ -z "$CODEX" ]; then
  CODEX="$(python3 -c 'import codex_cli_bin; print(codex_cli_bin.bundled_codex_path())' \
    2>/dev/null)" || { echo "pass the codex $VERSION binary, or install" \
    "openai-codex-cli-bin==$VERSION" >&2; exit 64; }
fi
"$CODEX" --version | grep -q "$VERSION" || { echo "$CODEX is not codex $VERSION" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# Even schema generation writes under $CODEX_HOME: keep it out of the user's ~/.codex.
CODEX_HOME="$WORK/home" HOME="$WORK/home" "$CODEX" app-server generate-json-schema \
  --out "$WORK/schema" 2>/dev/null
mkdir -p "$OUT"
cp "$WORK/schema/codex_app_server_protocol.schemas.json" "$OUT/"
echo "$VERSION" > "$OUT/VERSION"
echo "wrote $OUT"
