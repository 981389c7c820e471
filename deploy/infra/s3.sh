#!/usr/bin/env bash
# Start or stop a real S3 server on loopback for tests and local runs: MinIO when a `minio` binary is on PATH,
# otherwise a throwaway single-node Ceph radosgw (about 15 s to start).
# Usage: s3.sh start|stop DIR PORT   env: S3_ACCESS_KEY (localaccess), S3_SECRET_KEY (localsecret123),
#        S3_MON_PORT (PORT+100, Ceph monitor), S3_MEM_BYTES (4 GiB cap of the in-memory store),
#        S3_DURABLE=1 (objects on disk: BlueStore on a sparse file in DIR, kept across stop/start and crashes),
#        S3_READONLY_ACCESS_KEY + S3_READONLY_SECRET_KEY (radosgw only: a read-only subuser of the owner, for the
#        internet-facing {cdn} edge; DIR/readonly-user then names its access key)
# Start when already running is a no-op. Without S3_DURABLE Ceph keeps objects in memory (memstore, for tests):
# stopping it loses them. With it, a DIR that already holds a store is started again as it is (no mkfs).
# Auth between Ceph daemons is off; S3 requests are still signed and checked against the user created below.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cmd=${1:?start|stop}
D=${2:?DIR}
PORT=${3:-7480}
ACCESS=${S3_ACCESS_KEY:-localaccess}
SECRET=${S3_SECRET_KEY:-localsecret123}
MEM=${S3_MEM_BYTES:-4294967296}
MONPORT=${S3_MON_PORT:-$((PORT + 100))}
DURABLE=${S3_DURABLE:-0}
# Deleted objects give their space back within about two minutes (radosgw's defaults keep them two hours, so a
# store that deletes as much as it writes fills up, and a full Ceph store makes every write wait).
RGW_GC=(--rgw_gc_obj_min_wait=60 --rgw_gc_processor_period=60 --rgw_gc_processor_max_time=60)

# Stop every daemon at once: the in-memory store has nothing worth a slow shutdown (the OSD takes ~7 s on TERM).
stop_all() {
  local f pids=() i
  for f in "$D"/run/*.pid "$D"/minio.pid; do [ -f "$f" ] && pids+=("$(cat "$f")") && rm -f "$f"; done
  rm -f "$D/ready"
  [ ${#pids[@]} -gt 0 ] || return 0
  kill "${pids[@]}" 2>/dev/null || true
  # A durable store gets time to close cleanly (BlueStore survives a kill too, it then replays its log).
  local patience=15
  [ -f "$D/durable" ] && patience=100
  for ((i = 0; i < patience; i++)); do any_alive "${pids[@]}" || return 0; sleep 0.2; done
  kill -9 "${pids[@]}" 2>/dev/null || true
  for ((i = 0; i < 25; i++)); do any_alive "${pids[@]}" || return 0; sleep 0.2; done
}
any_alive() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
if [ "$cmd" = stop ]; then stop_all; exit 0; fi

ready() { echo "S3 ready: http://127.0.0.1:$PORT access=$ACCESS${RO_ACCESS:+ read-only=$RO_ACCESS}"; }
RO_ACCESS=${S3_READONLY_ACCESS_KEY:-}
RO_SECRET=${S3_READONLY_SECRET_KEY:-}
# A subuser with `read` access (security review F8): its keys GET, HEAD, list and presign, and every PUT, DELETE or
# bucket-policy change answers AccessDenied. Creating it again is a no-op, so a durable store gets it at any start.
readonly_user() {
  [ -n "$RO_ACCESS" ] || return 0
  [ -n "$RO_SECRET" ] || { echo "s3: S3_READONLY_ACCESS_KEY needs S3_READONLY_SECRET_KEY" >&2; return 1; }
  timeout 60 radosgw-admin -c "$D/ceph.conf" subuser create --uid=local --subuser=local:readonly --access=read \
    --key-type=s3 --access-key="$RO_ACCESS" --secret="$RO_SECRET" >/dev/null || return 1
  echo "$RO_ACCESS" >"$D/readonly-user"
}
if [ -f "$D/ready" ] && { pid_alive "$D/minio.pid" || pid_alive "$D/run/client.rgw.a.pid"; } \
  && curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then
  if [ -n "$RO_ACCESS" ] && [ -f "$D/ceph.conf" ] && [ "$(cat "$D/readonly-user" 2>/dev/null)" != "$RO_ACCESS" ]; then
    readonly_user || { echo "s3: radosgw-admin subuser create failed" >&2; exit 1; }
  fi
  ready; exit 0
fi
stop_all
if port_busy "$PORT"; then echo "s3: port $PORT is taken by another process" >&2; exit 1; fi

if command -v minio >/dev/null; then
  mkdir -p "$D/data"
  MINIO_ROOT_USER="$ACCESS" MINIO_ROOT_PASSWORD="$SECRET" setsid minio server "$D/data" \
    --address "127.0.0.1:$PORT" --console-address "127.0.0.1:$MONPORT" >>"$D/minio.log" 2>&1 </dev/null &
  echo $! >"$D/minio.pid"
  wait_http "http://127.0.0.1:$PORT/minio/health/ready" 60 \
    || { echo "s3: minio not ready; log tail:" >&2; tail -n 20 "$D/minio.log" >&2; exit 1; }
  # MinIO's users need its `mc` client: the read-only user is radosgw's only (the services share the root user).
  [ -z "$RO_ACCESS" ] || echo "s3: no read-only user with MinIO (radosgw only); every service uses $ACCESS" >&2
  touch "$D/ready"; ready; exit 0
fi

export CEPH_CONF="$D/ceph.conf"
fail() { echo "s3: $1; logs in $D/log" >&2; tail -n 20 "$D"/log/*.log >&2 2>/dev/null || true; stop_all; exit 1; }
wait_http_any() { for _ in $(seq 1 300); do curl -s -o /dev/null --max-time 2 "$1" && return 0; sleep 0.2; done; return 1; }
wait_osd_up() {
  local _
  for _ in $(seq 1 60); do
    if timeout 10 ceph -c "$D/ceph.conf" osd stat 2>/dev/null | grep -q '1 up'; then return 0; fi
    sleep 1
  done
  return 1
}

# A durable store made earlier: start its daemons again on its data (the objects, buckets and user are there).
if [ "$DURABLE" = 1 ] && [ -f "$D/durable" ] && [ -f "$D/ceph.conf" ]; then
  mkdir -p "$D/run" "$D/log"
  # A store made before tcp_nodelay was set (see [client.rgw.a] below) gets it now.
  grep -q '^rgw frontends = .*tcp_nodelay' "$D/ceph.conf" || sed -i 's|^\(rgw frontends = beast .*\)$|\1 tcp_nodelay=1|' "$D/ceph.conf"
  ceph-mon -c "$D/ceph.conf" -i a 2>>"$D/log/start.log" || fail "monitor did not start"
  ceph-osd -c "$D/ceph.conf" -i 0 2>>"$D/log/start.log" || fail "osd did not start"
  wait_osd_up || fail "osd not up after 60 s"
  radosgw -c "$D/ceph.conf" -n client.rgw.a "${RGW_GC[@]}" 2>>"$D/log/start.log" || fail "radosgw did not start"
  wait_http_any "http://127.0.0.1:$PORT/" || fail "radosgw not answering after 60 s"
  readonly_user || fail "radosgw-admin subuser create failed"
  touch "$D/ready"
  ready
  exit 0
fi

if [ "$DURABLE" != 1 ] && [ -f "$D/durable" ]; then
  echo "s3: $D holds a durable store: start it with S3_DURABLE=1 (or remove $D to start over)" >&2
  exit 1
fi
if [ "$DURABLE" = 1 ]; then
  # BlueStore on a sparse file: 20 GiB apparent, about 100 MB used when empty.
  STORE="osd objectstore = bluestore
bluestore block create = true
bluestore block size = ${S3_DISK_BYTES:-21474836480}
bluestore fsck on mount = false"
else
  STORE="osd objectstore = memstore
memstore device bytes = $MEM"
fi

rm -rf "$D" && mkdir -p "$D/mon.a" "$D/osd.0" "$D/run" "$D/log"
FSID=$(cat /proc/sys/kernel/random/uuid)
cat >"$D/ceph.conf" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MONPORT
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
# without crc modes radosgw loops on auth error -13 for minutes
ms mon client mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
ms mon cluster mode = crc
ms mon service mode = crc
mon warn on pool no redundancy = false
$STORE
osd crush chooseleaf type = 0
run dir = $D/run
log file = $D/log/\$name.log
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
[mon.a]
mon data = $D/mon.a
[osd.0]
osd data = $D/osd.0
[client.rgw.a]
# tcp_nodelay: without it a GET of a small object (a JSON marker, a thumbnail) waits ~40 ms on Nagle and the
# client's delayed ACK (44 ms against 1.6 ms for a 100-byte object, measured here).
rgw frontends = beast endpoint=127.0.0.1:$PORT tcp_nodelay=1
rgw dns name = localhost
CONF
monmaptool --create --fsid "$FSID" --addv a "[v2:127.0.0.1:$MONPORT]" "$D/monmap" >/dev/null
ceph-authtool --create-keyring "$D/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" --keyring "$D/mon.keyring"
ceph-mon -c "$D/ceph.conf" -i a 2>>"$D/log/start.log"
OSD_ID=$(timeout 60 ceph -c "$D/ceph.conf" osd create) || fail "monitor did not answer"
ceph-osd -c "$D/ceph.conf" -i "$OSD_ID" --mkfs >/dev/null 2>&1 || fail "osd mkfs failed"
ceph-osd -c "$D/ceph.conf" -i "$OSD_ID" 2>>"$D/log/start.log"
wait_osd_up || fail "osd not up after 60 s"
radosgw -c "$D/ceph.conf" -n client.rgw.a "${RGW_GC[@]}" 2>>"$D/log/start.log"
wait_http_any "http://127.0.0.1:$PORT/" || fail "radosgw not answering after 60 s"
timeout 60 radosgw-admin -c "$D/ceph.conf" user create --uid=local --display-name=local \
  --access-key="$ACCESS" --secret="$SECRET" >/dev/null || fail "radosgw-admin user create failed"
readonly_user || fail "radosgw-admin subuser create failed"
[ "$DURABLE" = 1 ] && touch "$D/durable"
touch "$D/ready"
ready
