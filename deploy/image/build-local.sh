#!/usr/bin/env bash
# Builds the Dockerfile's images on a Debian 12 machine without Docker or Docker Hub, and smoke-tests them:
#   1. installs buildah and podman from Debian (as root);
#   2. makes a stand-in for node:24-bookworm-slim: a minimal bookworm (debootstrap, from Debian's mirror) plus the
#      project's pinned Node 24 (deploy/infra/node-env.sh, installed by deploy/infra/install-deps.sh: the official
#      binary and npm; Debian's own nodejs is 18), imported as $BASE_IMAGE;
#   3. builds the targets (runtime, media) with NODE_IMAGE=$BASE_IMAGE (packages from the npm registry and Debian);
#   4. runs them as Kubernetes will (read-only root, tmpfs /tmp and /var/cache/dam, uid 10001, no capabilities):
#      the entry point's usage and its refusal of an unknown service, compiled JavaScript on the pinned Node (no
#      TypeScript, no tsx), every service up to its configuration check, the addon's models, the media tools;
#   5. with --suite: against PostgreSQL and NATS (the local suite's when deploy/local/up runs, else its own, stopped
#      afterwards): `migrate auth` (the init container), auth and gateway from the image, their /healthz and
#      /readyz, a login through the gateway container to the auth container, their exit on SIGTERM.
# Rerunnable: the base is made once (DAM_IMAGE_REBASE=1 makes it again); image builds reuse buildah's layers.
# Usage: deploy/image/build-local.sh [--suite] [target...]      (targets: runtime media; default both)
# env: DAM_IMAGE_WORK     work folder (default /tmp/dam-image: the base's root file system, step 5's data)
#      DAM_IMAGE_NAME     default localhost/dam (tags :runtime and :media)
#      DEBIAN_MIRROR      default http://deb.debian.org/debian
#      DAM_IMAGE_REBASE=1 make the base again; DAM_IMAGE_EXTRA_CA=0 leave this machine's extra CAs out (step 2)
#      DAM_IMAGE_SKIP_BUILD=1 tests only; DAM_IMAGE_PRUNE=1 remove dangling images after the build (frees disk,
#      loses the layer cache of the build stages)
#      BUILDAH_ISOLATION  default chroot; PODMAN_RUNTIME default runc; STORAGE_DRIVER (containers/storage's, e.g.
#      vfs where overlay is refused). Images live in root's containers storage (/var/lib/containers).
# shellcheck disable=SC2016 # the single-quoted scripts are run by the containers' shells
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${DAM_IMAGE_WORK:-/tmp/dam-image}
IMAGE=${DAM_IMAGE_NAME:-localhost/dam}
# shellcheck source=../infra/node-env.sh
DAM_NODE_OPTIONAL=1 . "$ROOT/deploy/infra/node-env.sh"
BASE_IMAGE=localhost/dam-node-base:$DAM_NODE_VERSION-bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export BUILDAH_ISOLATION=${BUILDAH_ISOLATION:-chroot}

suite=0
targets=()
for arg in "$@"; do
  case $arg in
    --suite) suite=1 ;;
    runtime | media) targets+=("$arg") ;;
    *) echo "usage: $0 [--suite] [runtime|media ...]" >&2; exit 64 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(runtime media)

step() { printf '\n== %s\n' "$*"; }
die() { echo "build-local: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (apt-get, debootstrap and root buildah/podman need it)"
mkdir -p "$WORK"

# ---- 1. tools --------------------------------------------------------------------------------------------------
step "1. buildah, podman, debootstrap"
need=()
for p in buildah podman debootstrap fuse-overlayfs uidmap runc; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null || die "apt-get install ${need[*]} failed"
fi
# This sandbox (and machines like it): crun refuses hybrid cgroups ("cgroups in hybrid mode not supported"), so
# podman runs containers with runc; and podman's default limits (nofile 1048576, nproc 4194304) are above the
# hard limits here without CAP_SYS_RESOURCE ("setrlimit RLIMIT_NOFILE: Operation not permitted"): ask for ours.
# podman lowers its own nproc limit to 32768 before starting the runtime, hence the cap.
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
podman() { command podman --runtime "${PODMAN_RUNTIME:-runc}" "$@"; }
podman_run() { podman run --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" "$@"; }
buildah --version
podman --version

# ---- 2. the Node 24 base ---------------------------------------------------------------------------------------
# The pinned Node (deploy/infra/node-env.sh), never this machine's /usr/bin/node: the image runs what CI ran.
step "2. base image $BASE_IMAGE (Debian bookworm minbase + Node $DAM_NODE_VERSION from $DAM_NODE_HOME)"
node_version=$("$DAM_NODE_HOME/bin/node" --version 2>/dev/null) \
  || die "Node $DAM_NODE_VERSION is not installed in $DAM_NODE_HOME: run deploy/infra/install-deps.sh"
[ "$node_version" = "v$DAM_NODE_VERSION" ] || die "$DAM_NODE_HOME/bin/node is $node_version, not the pinned v$DAM_NODE_VERSION"
node_bin=$DAM_NODE_HOME/bin/node
modules_dir=$DAM_NODE_HOME/lib/node_modules
[ -f "$modules_dir/npm/package.json" ] || die "npm not found in $modules_dir (run deploy/infra/install-deps.sh)"

rootfs=$WORK/rootfs
stamp="$node_version $MIRROR"
if [ "${DAM_IMAGE_REBASE:-}" = 1 ] || [ "$(cat "$WORK/rootfs.done" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$rootfs" "$WORK/rootfs.done"
  echo "debootstrap bookworm (minbase) into $rootfs from $MIRROR"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log: $WORK/debootstrap.log)"; }
  # As debian:bookworm-slim: the three suites, and no docs, man pages or locales from later installs.
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${MIRROR%/debian}/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
DPKG
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/*/[!c]* "$rootfs"/usr/share/man/*
  # Node where the official image has it: /usr/local/bin/node, npm and corepack in /usr/local/lib/node_modules.
  install -D -m 0755 "$node_bin" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  for m in npm corepack; do
    [ -d "$modules_dir/$m" ] && cp -a "$modules_dir/$m" "$rootfs/usr/local/lib/node_modules/"
  done
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  [ -d "$rootfs/usr/local/lib/node_modules/corepack" ] && ln -sf ../lib/node_modules/corepack/dist/corepack.js "$rootfs/usr/local/bin/corepack"
  # This machine's extra certificate authorities (a TLS-intercepting egress proxy, as in the sandbox this was made
  # in: npm and pnpm fail with SELF_SIGNED_CERT_IN_CHAIN without them): trusted by the local base only, through the
  # environment (node: NODE_EXTRA_CA_CERTS; pnpm, a native binary: SSL_CERT_FILE) and by ca-certificates when a
  # stage installs it. node:24-bookworm-slim has none of this. DAM_IMAGE_EXTRA_CA=0 leaves them out.
  rm -f "$WORK/base-env"
  if [ "${DAM_IMAGE_EXTRA_CA:-1}" = 1 ] && ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
    mkdir -p "$rootfs/usr/local/share/ca-certificates" "$rootfs/etc/ssl/certs"
    cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
    cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
    echo "extra CAs: $(cd /usr/local/share/ca-certificates && echo *.crt)"
    printf '%s\n' NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt >"$WORK/base-env"
  fi
  chroot "$rootfs" /usr/local/bin/node --version >/dev/null || die "node does not run inside $rootfs (missing libraries?)"
  echo "$stamp" >"$WORK/rootfs.done"
  podman rmi -f "$BASE_IMAGE" >/dev/null 2>&1 || true
fi
if ! podman image exists "$BASE_IMAGE"; then
  changes=(--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' --change 'CMD ["node"]')
  while IFS= read -r e; do changes+=(--change "ENV $e"); done < <(cat "$WORK/base-env" 2>/dev/null)
  tar -C "$rootfs" --numeric-owner -cf - . | podman import "${changes[@]}" - "$BASE_IMAGE" >/dev/null \
    || die "podman import of $rootfs failed"
fi
podman_run --rm --network host "$BASE_IMAGE" sh -c 'echo "base: node $(node --version), npm $(npm --version), $(. /etc/os-release; echo $PRETTY_NAME)"' \
  || die "the base image does not run (podman run failed)"

# ---- 3. the images ---------------------------------------------------------------------------------------------
if [ "${DAM_IMAGE_SKIP_BUILD:-}" != 1 ]; then
  for target in "${targets[@]}"; do
    step "3. build target $target -> $IMAGE:$target"
    started=$(date +%s)
    buildah bud --layers --network host --isolation "$BUILDAH_ISOLATION" \
      --build-arg NODE_IMAGE="$BASE_IMAGE" --target "$target" -t "$IMAGE:$target" -f "$ROOT/Dockerfile" "$ROOT" \
      || die "buildah bud --target $target failed"
    echo "$target built in $(($(date +%s) - started)) s"
  done
fi
if [ "${DAM_IMAGE_PRUNE:-}" = 1 ]; then
  podman image prune -f >/dev/null
fi
step "images"
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^($IMAGE|$BASE_IMAGE)" || true

# ---- 4. smoke tests --------------------------------------------------------------------------------------------
# As Kubernetes will run it: read-only root, writable /tmp and /var/cache/dam, no root, no added privileges.
# shellcheck disable=SC2054 # the commas are podman's
k8s_opts=(--read-only --tmpfs /tmp:rw,mode=1777 --tmpfs /var/cache/dam:rw,mode=1777
  --security-opt no-new-privileges --cap-drop ALL)
run_opts=(--rm --network host "${k8s_opts[@]}")
expect() { # expect <description> <pattern> <command...>: runs it, prints its output, checks the pattern is in it
  local what=$1 pattern=$2 out
  shift 2
  out=$("$@" 2>&1 || true)
  printf '%s\n' "$out" | sed 's/^/    /' | tail -n 12
  printf '%s\n' "$out" | grep -qE -- "$pattern" || die "$what: expected /$pattern/ in the output above"
  echo "  ok: $what"
}
for target in "${targets[@]}"; do
  img=$IMAGE:$target
  step "4. smoke tests of $img"
  podman image exists "$img" || die "$img does not exist (build it first)"
  expect "usage without a service" "usage: run-service" podman_run "${run_opts[@]}" "$img"
  expect "an unknown service is refused" "unknown service 'nope'" podman_run "${run_opts[@]}" "$img" nope
  expect "image config: user 10001, tini entry point" '^10001:10001 \["tini","--","/app/deploy/image/run-service"\]' \
    podman image inspect --format '{{.Config.User}} {{json .Config.Entrypoint}}' "$img"
  expect "tini is PID 1, the process runs as uid 10001" "pid1=tini uid=10001" podman_run "${run_opts[@]}" --entrypoint tini "$img" \
    -- sh -c 'echo "pid1=$(cat /proc/1/comm) uid=$(id -u)"'
  # Without their variables, services stop at their configuration check, which runs after their whole module
  # graph was loaded (the compiled bundle, every dependency resolved in the pruned node_modules); no network.
  for svc in gateway upload link-signing auth metadata search conversion transcode addon webhook; do
    expect "$svc loads and checks its configuration" "^Invalid configuration" \
      podman_run --rm --network none "${k8s_opts[@]}" "$img" "$svc"
  done
  # Compiled JavaScript on the pinned Node: a bundle per service, no TypeScript sources and no loader (tsx) inside.
  expect "compiled JavaScript on Node $DAM_NODE_VERSION, no TypeScript, no tsx" \
    "^node=v$DAM_NODE_VERSION bundles=$(find "$ROOT/services" -mindepth 3 -maxdepth 3 -path '*/src/main.ts' | wc -l) ts=0 tsx=no\$" \
    podman_run "${run_opts[@]}" --entrypoint sh "$img" -c 'cd /app && echo "node=$(node --version) bundles=$(ls services/*/dist/main.js | wc -l)" \
      "ts=$(find libs services -name "*.ts" | wc -l) tsx=$(node -e "require.resolve(\"tsx\")" >/dev/null 2>&1 && echo yes || echo no)"'
  # The addon's models ship inside node_modules: load them as the addon does (Human's objects and faces on tfjs
  # WASM, ISNet "medium" on onnxruntime-node's CPU build, run once on a tiny image), from the pruned image, with
  # deploy/image/check-addon-models.ts compiled here and mounted where its relative paths expect it.
  "$DAM_NODE_HOME/bin/node" "$ROOT/deploy/image/build-js.mjs" --entry "$ROOT/deploy/image/check-addon-models.ts" \
    "$ROOT/deploy/image/dist/check-addon-models.js" >/dev/null || die "compiling deploy/image/check-addon-models.ts failed"
  expect "the addon's models load from the pruned node_modules" "background removal loaded" \
    podman_run "${run_opts[@]}" -v "$ROOT/deploy/image/dist:/app/deploy/image/dist:ro" --entrypoint node "$img" \
      --enable-source-maps /app/deploy/image/dist/check-addon-models.js
  if [ "$target" = media ]; then
    expect "ffmpeg, ffprobe and tesseract (eng) run" "ffmpeg version .*ffprobe version .*tesseract languages: .*eng" \
      podman_run "${run_opts[@]}" --entrypoint sh "$img" -c 'echo "$(ffmpeg -hide_banner -version | head -n 1 | cut -d" " -f1-3);" \
        "$(ffprobe -hide_banner -version | head -n 1 | cut -d" " -f1-3); tesseract languages: $(tesseract --list-langs 2>&1 | tail -n +2 | tr "\n" " ")"'
  fi
done

# ---- 5. against the local suite's infrastructure ------------------------------------------------------------------
# auth (port 18090) and gateway (18080) from the image, host network, against PostgreSQL and NATS: those of a
# suite deploy/local/up started (DAM_DATA_DIR, default .data), or, when none runs, a NATS and a PostgreSQL of its
# own started with deploy/infra in $WORK/suite (the suite's ports: 4222, 5432 or 55432) and stopped afterwards.
if [ "$suite" = 1 ]; then
  img=$IMAGE:${targets[0]}
  step "5. auth and gateway from $img against PostgreSQL and NATS"
  own_infra=0
  # shellcheck source=/dev/null
  . "$ROOT/deploy/local/env.sh"
  if [ -z "$(dam_pg_port)" ] || ! curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$NATS_MONITOR_PORT/healthz"; then
    own_infra=1
    export DAM_DATA_DIR=$WORK/suite
    # shellcheck source=/dev/null
    . "$ROOT/deploy/local/env.sh"
    echo "no local suite running: NATS and PostgreSQL of our own in $DAM_DATA"
    # shellcheck source=/dev/null
    . "$DAM_INFRA/common.sh"
    port_busy "$NATS_PORT" && die "port $NATS_PORT is taken by a NATS that is not ours"
    mkdir -p "$DAM_DATA/run"
    pg_port=5432; port_busy 5432 && pg_port=55432
    echo "$pg_port" >"$DAM_DATA/run/pg-port"
    dam_nats_users
    "$DAM_INFRA/nats.sh" start "$DAM_DATA/nats" "$NATS_PORT" "$NATS_MONITOR_PORT" "$DAM_DATA/$DAM_NATS_CONF_FILE" >/dev/null
    "$DAM_INFRA/postgres.sh" start "$DAM_DATA/pg" "$pg_port" >/dev/null
    # A fresh database each run: the migrations below start from nothing.
    db=$(dam_db_name auth)
    psql -h 127.0.0.1 -p "$pg_port" -U postgres -qc "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  else
    echo "using the local suite running from $DAM_DATA"
    dam_nats_users >/dev/null
  fi
  dam_export_env
  names=()
  cleanup() {
    for n in "${names[@]}"; do command podman rm -f "$n" >/dev/null 2>&1 || true; done
    if [ "$own_infra" = 1 ]; then
      "$DAM_INFRA/nats.sh" stop "$DAM_DATA/nats" || true
      "$DAM_INFRA/postgres.sh" stop "$DAM_DATA/pg" || true
    fi
  }
  trap cleanup EXIT
  # run_service <service> <port> [-e ...]: as deploy/local/up starts it (development: the suite's default admin),
  # on another port, on loopback; waits until <path> answers (auth: /readyz; gateway: /healthz, its readiness
  # being every upstream's).
  run_service() {
    local svc=$1 port=$2 path=$3 name=dam-image-$1-$$ i started
    shift 3
    names+=("$name")
    podman_run -d --name "$name" --network host "${k8s_opts[@]}" -e PORT="$port" -e HOST=127.0.0.1 -e NODE_ENV=development \
      -e SERVICE_KEY="$(dam_service_key "$svc")" -e JWT_SECRET -e SERVICE_TRUSTED_KEYS "$@" "$img" "$svc" >/dev/null
    started=$(date +%s%N)
    for i in $(seq 1 240); do
      curl -fs -o /dev/null "http://127.0.0.1:$port$path" && break
      [ "$(podman inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || i=240
      [ "$i" -lt 240 ] || { podman logs "$name" 2>&1 | tail -n 8 | cut -c1-240 >&2; die "$svc in the image did not answer $path on :$port"; }
      sleep 0.5
    done
    echo "$svc: $path answers $((($(date +%s%N) - started) / 1000000)) ms after podman run"
    podman logs "$name" 2>&1 | tail -n 2 | cut -c1-240 | sed 's/^/    /'
  }
  # The init container of deploy/k8s: `migrate auth` applies auth's migrations and exits; twice is harmless.
  for i in 1 2; do
    out=$(podman_run --rm --network host "${k8s_opts[@]}" -e DATABASE_URL="$PG_BASE_URL/$(dam_db_name auth)" "$img" migrate auth 2>&1) \
      || die "run-service migrate auth failed: $out"
    echo "  migrate auth ($i): $out"
  done
  # auth: PostgreSQL (its migrations are read from the image); without NATS_URL it does not wait for metadata's
  # streams (which metadata creates, and metadata needs S3).
  run_service auth 18090 /readyz -e DATABASE_URL="$PG_BASE_URL/$(dam_db_name auth)" -e METADATA_URL \
    -e ADMIN_EMAIL -e ADMIN_PASSWORD -e WEBHOOK_ALLOW_HOSTS
  echo "  GET auth /healthz: $(curl -fsS http://127.0.0.1:18090/healthz)"
  echo "  GET auth /readyz:  $(curl -fsS http://127.0.0.1:18090/readyz)"
  # gateway: NATS (usage counts), auth upstream = the auth container above.
  run_service gateway 18080 /healthz -e NATS_URL -e NATS_NKEY_SEED="$(dam_nats_seed gateway)" -e AUTH_URL=http://127.0.0.1:18090
  echo "  GET gateway /healthz: $(curl -fsS http://127.0.0.1:18080/healthz)"
  login=$(curl -sS -H 'content-type: application/json' -d "{\"email\":\"$ADMIN_EMAIL\",\"password\":\"$ADMIN_PASSWORD\"}" \
    http://127.0.0.1:18080/api/v1/login)
  printf '%s\n' "$login" | grep -q '"jwt":"ey' || die "login through the gateway container to the auth container failed: $login"
  echo "  POST gateway /api/v1/login -> auth: a jwt for $(printf '%s' "$login" | grep -oE '"user_email":"[^"]*"|"role_name":"[^"]*"' | tr '\n' ' ')"
  for n in "${names[@]}"; do
    started=$(date +%s%N)
    podman stop -t 30 "$n" >/dev/null
    echo "  $n: SIGTERM to exit $((($(date +%s%N) - started) / 1000000)) ms, exit code $(podman inspect -f '{{.State.ExitCode}}' "$n")"
    podman logs "$n" 2>&1 | tail -n 2 | cut -c1-240 | sed 's/^/    /'
  done
fi
step "done"
