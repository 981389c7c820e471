#!/usr/bin/env bash
# Install what the project needs on a fresh Debian 12 machine (run as root, or with sudo available).
# Idempotent and fast when everything is present: apt is touched only when a package is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PNPM_VERSION=12.21.0
# tesseract-ocr and its English data: the text_extraction addon (offline; no model is downloaded at run time).
# chromium: the web console's browser test (test/e2e/console.e2e.test.ts drives it with playwright-core; playwright
# downloads no browser of its own).
PACKAGES=(nats-server postgresql ceph-mon ceph-osd radosgw ceph-common ffmpeg curl tesseract-ocr tesseract-ocr-eng chromium)

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

if ! command -v pnpm >/dev/null; then
  echo "install-deps: installing pnpm@$PNPM_VERSION"
  as_root npm i -g "pnpm@$PNPM_VERSION" >/dev/null
fi

# Several people (and CI steps) share one tree: never run two installs at once.
cd "$ROOT"
CI=${CI:-true} flock /tmp/dam-pnpm.lock pnpm install --frozen-lockfile --reporter=silent </dev/null
echo "install-deps: ok"
