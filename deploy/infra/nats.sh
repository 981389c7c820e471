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
# JetStream is enabled in the config file itself, not with -js/-sd: a reload (SIGHUP) of a server started with
# -js but no `jetstream` block in its config shuts JetStream down. The authorization block is included.
{
  echo "jetstream { store_dir: \"$D/jetstream\" }"
  if [ -n "$CONF" ]; then echo "include \"$(realpath --relative-to="$D" "$CONF")\""; fi
} >"$D/nats.conf"
# JetStream runs (GET /jsz says `"disabled": true` once it was shut down; /healthz does not notice).
js_running() { local jsz; jsz=$(curl -fs --max-time 2 "http://127.0.0.1:$MONPORT/jsz") && ! grep -q '"disabled": *true' <<<"$jsz"; }
if pid_alive "$PID"; then
  # The config may have changed (new identities or permissions): SIGHUP makes nats-server reload it.
  kill -HUP "$(cat "$PID")"
  wait_http "http://127.0.0.1:$MONPORT/healthz?js-enabled-only=true" 20 || { echo "nats: running but not ready" >&2; exit 1; }
  if ! js_running; then
    echo "nats: running without JetStream (started by an older nats.sh?): stop it (deploy/local/down) and start again" >&2
    exit 1
  fi
  echo "NATS already running: nats://127.0.0.1:$PORT"
  exit 0
fi
if port_busy "$PORT"; then echo "nats: port $PORT is taken by another process" >&2; exit 1; fi
setsid nats-server -c "$D/nats.conf" -a 127.0.0.1 -p "$PORT" -m "$MONPORT" -P "$PID" \
  >>"$D/nats.log" 2>&1 </dev/null &
if ! wait_http "http://127.0.0.1:$MONPORT/healthz?js-enabled-only=true" 20 || ! js_running; then
  echo "nats: not ready after 20 s; log tail:" >&2; tail -n 20 "$D/nats.log" >&2; exit 1
fi
echo "NATS ready: nats://127.0.0.1:$PORT (monitor :$MONPORT)"
