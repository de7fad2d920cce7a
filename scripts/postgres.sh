#!/usr/bin/env bash
# A throwaway PostgreSQL server for the store tests.
#
#   eval "$(bash scripts/postgres.sh start)"   # exports REIN_TEST_POSTGRES_URL (+ _DIR)
#   bash scripts/postgres.sh stop              # stops it and removes its files
#
# With no server binaries (`make system-deps` offers to install Debian's postgresql), prints
# nothing to export and the PostgreSQL tests skip with the reason.
# The server listens on a Unix socket in a temporary directory only (no TCP port).
set -u
log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
  return 1
}

start() {
  local bin
  if ! bin=$(find_bin); then
    # Installing it is scripts/system-deps.sh's, which asks first (or CI asks for it).
    log "no PostgreSQL server binaries: its tests will skip (\`make system-deps\` installs them)"
    return 0
  fi
  local dir run_as=()
  dir=$(mktemp -d "${TMPDIR:-/tmp}/rein-pg.XXXXXX")
  if [ "$(id -u)" = 0 ]; then
    # initdb refuses to run as root: the cluster belongs to the postgres user.
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
    chmod 755 "$dir"
    run_as=(runuser -u postgres --)
  fi
  local user
  user=$([ "$(id -u)" = 0 ] && echo postgres || id -un)
  if ! "${run_as[@]}" "$bin/initdb" -D "$dir/data" -U "$user" -A trust --no-sync >"$dir/initdb.log" 2>&1; then
    log "initdb failed (see $dir/initdb.log): PostgreSQL tests will skip"; return 0
  fi
  if ! "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -s \
      -o "-k $dir -c listen_addresses= -c fsync=off -c full_page_writes=off" start >&2; then
    log "the server did not start (see $dir/server.log): PostgreSQL tests will skip"; return 0
  fi
  echo "export REIN_TEST_POSTGRES_DIR='$dir'"
  echo "export REIN_TEST_POSTGRES_URL='postgresql:///postgres?host=$dir&user=$user'"
  log "server up in $dir"
}

stop() {
  local dir="${REIN_TEST_POSTGRES_DIR:-}" bin
  [ -n "$dir" ] && [ -d "$dir/data" ] || return 0
  bin=$(find_bin) || return 0
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m immediate -w -s stop >&2 || true
  else
    "$bin/pg_ctl" -D "$dir/data" -m immediate -w -s stop >&2 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 64 ;;
esac
