#!/usr/bin/env bash
# Start or stop a throwaway PostgreSQL cluster on loopback (trust auth, fsync off: for tests and local runs).
# Usage: postgres.sh start|stop DIR PORT   (start when already running is a no-op; data in DIR survives stop)
set -euo pipefail
cmd=${1:?start|stop}
D=${2:?DIR}
PORT=${3:-5432}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$BIN" ] || { echo "postgres: no /usr/lib/postgresql/*/bin (run deploy/infra/install-deps.sh)" >&2; exit 1; }

# PostgreSQL refuses to run as root: run its tools as the postgres user, who must own DIR.
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$cmd" = stop ]; then
  if [ -f "$D/postmaster.pid" ]; then as_pg "$BIN/pg_ctl" -D "$D" -m fast -w stop >/dev/null 2>&1 || true; fi
  exit 0
fi

if [ -f "$D/postmaster.pid" ]; then
  pid=$(head -n 1 "$D/postmaster.pid")
  if grep -qa postgres "/proc/$pid/cmdline" 2>/dev/null && as_pg "$BIN/pg_ctl" -D "$D" status >/dev/null 2>&1; then
    echo "PostgreSQL already running: $D"
    exit 0
  fi
  # Stale: the postmaster died without removing its lock file (SIGKILL, power loss), and its pid is gone or now
  # names another process (which pg_ctl and the server would take for a running postmaster and refuse to start).
  echo "PostgreSQL: removing the stale $D/postmaster.pid (pid $pid is not a postmaster)"
  rm -f "$D/postmaster.pid"
fi
mkdir -p "$D"
if [ "$(id -u)" = 0 ]; then
  chown postgres:postgres "$D" && chmod 700 "$D"
  runuser -u postgres -- test -x "$(dirname "$D")" \
    || { echo "postgres: user postgres cannot reach $(dirname "$D") (needs o+x on each parent folder)" >&2; exit 1; }
fi
if [ ! -f "$D/PG_VERSION" ]; then
  as_pg "$BIN/initdb" -D "$D" -A trust -U postgres >"$D.initdb.log" 2>&1 \
    || { cat "$D.initdb.log" >&2; exit 1; }
fi
if ! as_pg "$BIN/pg_ctl" -D "$D" -l "$D/server.log" -w -t 30 \
  -o "-p $PORT -k $D -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off" \
  start >/dev/null; then
  echo "postgres: failed to start; log tail:" >&2; tail -n 20 "$D/server.log" >&2; exit 1
fi
echo "PostgreSQL ready: postgres://postgres@127.0.0.1:$PORT/postgres"
