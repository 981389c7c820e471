#!/bin/sh
# Image build step (Dockerfile, stage `prod`): turns the full install in the current directory (the workspace
# root) into what the services run with:
#   1. production dependencies only (`pnpm install --prod`, offline, from the store the full install used);
#   2. plus the packages the image starts services with although they are root devDependencies (tsx and what it
#      needs: esbuild and its platform binary), copied back from the full install;
#   3. minus onnxruntime-node's binaries for other platforms (about 115 MB of darwin/win32/other-arch builds).
# env: KEEP_PACKAGES (default "tsx"), PNPM_STORE_DIR (the store the full install used).
set -eu

keep=${KEEP_PACKAGES:-tsx}
[ -d node_modules/.pnpm ] || { echo "prune-prod: no node_modules/.pnpm in $(pwd): run the full install first" >&2; exit 1; }

stash=$(mktemp -d)
trap 'rm -rf "$stash"' EXIT

# 1 + 2: keep the closure of $keep aside, prune, put it back (entries pnpm kept for production are left as they are).
entries=$(node deploy/image/pnpm-closure.mjs $keep)
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

# 3: onnxruntime-node loads bin/napi-v3/<platform>/<arch> only (its postinstall is not run: see allowBuilds).
platform=$(node -p process.platform)
arch=$(node -p process.arch)
for bin in node_modules/.pnpm/onnxruntime-node@*/node_modules/onnxruntime-node/bin/napi-v*; do
  [ -d "$bin/$platform/$arch" ] || { echo "prune-prod: $bin has no $platform/$arch build" >&2; exit 1; }
  for dir in "$bin"/*/*; do
    [ "$dir" = "$bin/$platform/$arch" ] || rm -rf "$dir"
  done
  find "$bin" -mindepth 1 -type d -empty -delete
done

echo "prune-prod: node_modules/.pnpm holds $(ls node_modules/.pnpm | wc -l) entries, $(du -sh node_modules/.pnpm | cut -f1)"
