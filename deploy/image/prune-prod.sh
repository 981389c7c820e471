#!/bin/sh
# Image build step (Dockerfile, stage `prod`): turns the full install in the current directory (the workspace
# root) into what the services run with:
#   1. production dependencies only (`pnpm install --prod`, offline, from the store the full install used);
#   2. plus any devDependency named in KEEP_PACKAGES, copied back from the full install (none by default: the
#      services run compiled JavaScript, deploy/image/build-js.mjs, so tsx, esbuild and TypeScript are left out);
#   3. minus what only the projects left out of the image need (test, bench, deploy: e.g. kubernetes-models);
#   4. minus onnxruntime-node's binaries for other platforms (about 115 MB of darwin/win32/other-arch builds).
# env: KEEP_PACKAGES (default none), IMAGE_PROJECTS (default "libs/* services/*"), PNPM_STORE_DIR.
set -eu

keep=${KEEP_PACKAGES:-}
[ -d node_modules/.pnpm ] || { echo "prune-prod: no node_modules/.pnpm in $(pwd): run the full install first" >&2; exit 1; }

stash=$(mktemp -d)
trap 'rm -rf "$stash"' EXIT

# 1 + 2: keep the closure of $keep aside, prune, put it back (entries pnpm kept for production are left as they are).
entries=
# shellcheck disable=SC2086 # $keep is a list
[ -z "$keep" ] || entries=$(node deploy/image/pnpm-closure.mjs $keep)
for e in $entries; do cp -a "node_modules/.pnpm/$e" "$stash/"; done
for p in $keep; do mkdir -p "$stash/links/$(dirname "$p")"; cp -P "node_modules/$p" "$stash/links/$p"; done

# modules-cache-max-age=0: remove the orphaned store entries now (pnpm keeps them a week by default).
pnpm install --prod --frozen-lockfile --offline ${PNPM_STORE_DIR:+--store-dir "$PNPM_STORE_DIR"} \
  --config.modules-cache-max-age=0 --reporter=append-only </dev/null

for e in $entries; do [ -e "node_modules/.pnpm/$e" ] || mv "$stash/$e" "node_modules/.pnpm/$e"; done
for p in $keep; do
  [ -e "node_modules/$p" ] || { mkdir -p "node_modules/$(dirname "$p")"; cp -P "$stash/links/$p" "node_modules/$p"; }
  node -e "require.resolve('$p')" || { echo "prune-prod: $p does not resolve after pruning" >&2; exit 1; }
done

# 3: only what the image's projects reach (their links, recursively) and $keep stay in the virtual store.
# shellcheck disable=SC2086 # globs and lists
needed=$(node deploy/image/pnpm-closure.mjs ${IMAGE_PROJECTS:-libs/* services/*} $keep)
dropped=0
for dir in node_modules/.pnpm/*; do
  e=${dir##*/}
  if [ ! -d "$dir" ] || [ "$e" = node_modules ]; then continue; fi
  if ! printf '%s\n' "$needed" | grep -qxF "$e"; then rm -rf "$dir"; dropped=$((dropped + 1)); fi
done
# pnpm's hidden hoisting folder may now hold links to dropped entries.
find node_modules/.pnpm/node_modules -xtype l -delete 2>/dev/null || true
echo "prune-prod: dropped $dropped entries no image project needs"

# 4: onnxruntime-node loads bin/napi-v3/<platform>/<arch> only (its postinstall is not run: see allowBuilds).
platform=$(node -p process.platform)
arch=$(node -p process.arch)
for bin in node_modules/.pnpm/onnxruntime-node@*/node_modules/onnxruntime-node/bin/napi-v*; do
  [ -d "$bin" ] || continue
  [ -d "$bin/$platform/$arch" ] || { echo "prune-prod: $bin has no $platform/$arch build" >&2; exit 1; }
  for dir in "$bin"/*/*; do
    [ "$dir" = "$bin/$platform/$arch" ] || rm -rf "$dir"
  done
  find "$bin" -mindepth 1 -type d -empty -delete
done

echo "prune-prod: node_modules/.pnpm holds $(find node_modules/.pnpm -mindepth 1 -maxdepth 1 -type d -name '*@*' | wc -l) entries," \
  "$(du -sh node_modules/.pnpm | cut -f1)"
