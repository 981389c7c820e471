# Shared helpers for the infra scripts (sourced, not run).

# wait_http URL SECONDS: true once URL answers 2xx, false after SECONDS.
wait_http() {
  local url=$1 secs=$2 i
  for ((i = 0; i < secs * 5; i++)); do
    curl -fs -o /dev/null --max-time 2 "$url" && return 0
    sleep 0.2
  done
  return 1
}

# pid_alive FILE: the process named in FILE exists.
pid_alive() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# stop_pid FILE: TERM the process, wait up to 10 s for it to exit (so its ports are free), then KILL.
stop_pid() {
  local f=$1 pid i
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# port_busy PORT: something listens on 127.0.0.1:PORT.
port_busy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
