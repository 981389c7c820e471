#!/usr/bin/env bash
# Runs nats-server with the given arguments and stops it when stdin closes: startNats keeps stdin as a pipe,
# so the server goes away with the test process even when that process is SIGKILLed.
exec 3<&0
nats-server "$@" </dev/null 3<&- &
pid=$!
{ read -r _ <&3 || true; kill "$pid" 2>/dev/null; } &
wait "$pid"
