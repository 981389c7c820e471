#!/usr/bin/env bash
# Start or stop a NATS server with JetStream on loopback.
# Usage: nats.sh start|stop DIR PORT MONPORT [CONF]   (start when already running reloads CONF, else a no-op)
# CONF: a config file with the `authorization` block (deploy/local/nats-users.ts); without it, no authentication.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cmd=${1:?start|stop}
D=${2:?DIR}
PORT=${3:-4222}
MONPORT=${4:-8222}
CONF=${5:-}
PID="$D/nats.pid"

if [ "$cmd" = stop ]; then stop_pid "$PID"; exit 0; fi

mkdir -p "$D/jetstream"
if pid_alive "$PID"; then
  # The config may have changed (new identities or permissions): SIGHUP makes nats-server reload it.
  if [ -n "$CONF" ]; then kill -HUP "$(cat "$PID")"; fi
  wait_http "http://127.0.0.1:$MONPORT/healthz?js-enabled-only=true" 20 || { echo "nats: running but not ready" >&2; exit 1; }
  echo "NATS already running: nats://127.0.0.1:$PORT"
  exit 0
fi
if port_busy "$PORT"; then echo "nats: port $PORT is taken by another process" >&2; exit 1; fi
conf_args=()
if [ -n "$CONF" ]; then conf_args=(-c "$CONF"); fi
setsid nats-server "${conf_args[@]}" -js -a 127.0.0.1 -p "$PORT" -m "$MONPORT" -sd "$D/jetstream" -P "$PID" \
  >>"$D/nats.log" 2>&1 </dev/null &
if ! wait_http "http://127.0.0.1:$MONPORT/healthz?js-enabled-only=true" 20; then
  echo "nats: not ready after 20 s; log tail:" >&2; tail -n 20 "$D/nats.log" >&2; exit 1
fi
echo "NATS ready: nats://127.0.0.1:$PORT (monitor :$MONPORT)"
