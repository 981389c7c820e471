# One image for every DAM service; the service is chosen by the container's argument:
#   docker build --target runtime -t dam:runtime .      # every service, without ffmpeg/tesseract
#   docker build --target media   -t dam:media .        # + Debian's ffmpeg and tesseract (transcode, upload, addon)
#   docker run --rm dam:runtime gateway
# Services run as compiled JavaScript on plain node, no TypeScript loader at run time: the build stage compiles each
# service with the workspace libraries it imports into one bundle (deploy/image/build-js.mjs: esbuild,
# services/<name>/dist/main.js; third-party packages stay external, in the pruned node_modules: sharp, onnxruntime,
# the addon's models), and deploy/image/run-service runs `node services/<name>/dist/main.js`. Files the services read
# next to their sources stay where the sources had them (services/*/src/migrations/*.sql, docs/openapi.yaml,
# web/console/dist, services/addon/assets); the TypeScript files themselves are not in the image.
# Run time: uid 10001, read-only root file system; writable /tmp (TMPDIR, work folders) and /var/cache/dam
# (link-signing's byte cache, CDN_CACHE_DIR=/var/cache/dam/cdn). No HEALTHCHECK: Kubernetes probes /healthz and
# /readyz. deploy/image/build-local.sh builds and runs it with buildah/podman without Docker Hub.

# The Node 24 base, pinned to the exact version CI and the local suite run on (DAM_NODE_VERSION in
# deploy/infra/node-env.sh; deploy/test/image-js.unit.test.ts holds them equal). Override with
# --build-arg NODE_IMAGE=<an equivalent image> (a registry mirror, a digest); build-local.sh passes a locally made
# one (Debian bookworm + that pinned Node 24 + npm) and needs no Docker Hub.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---- pnpm: the base with the workspace's pnpm (the version deploy/infra/install-deps.sh installs) ---------------
FROM ${NODE_IMAGE} AS pnpm
ARG PNPM_VERSION=12.21.0
RUN npm install --global --no-audit --no-fund "pnpm@${PNPM_VERSION}" \
 && npm cache clean --force \
 && pnpm --version
# CI: no prompts, no TTY progress. The store lives in the stage's own layers (no BuildKit cache mount needed).
ENV CI=true PNPM_STORE_DIR=/pnpm/store
WORKDIR /app

# ---- deps: every package of the lockfile in the store, downloaded once per lockfile change ---------------------
FROM pnpm AS deps
# pnpm-workspace.yaml comes with the lockfile: its overrides must match the lockfile's, and its allowBuilds decide
# which install scripts run (sharp, esbuild, @swc/core yes; onnxruntime-node, protobufjs, @parcel/watcher no).
COPY pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch --store-dir "$PNPM_STORE_DIR" --reporter=append-only

# ---- build: the full workspace install (dev dependencies included) and the sources ----------------------------
FROM deps AS build
COPY . .
RUN pnpm install --frozen-lockfile --offline --store-dir "$PNPM_STORE_DIR" --reporter=append-only
# Optional gate: --build-arg TYPECHECK=true type-checks the sources the image holds (tests are not in the context).
ARG TYPECHECK=false
RUN if [ "$TYPECHECK" = true ]; then \
      echo '{"extends":"./tsconfig.base.json","compilerOptions":{"noEmit":true,"types":["node"]},"include":["libs/*/src/**/*.ts","services/*/src/**/*.ts"],"exclude":["libs/testing"]}' >tsconfig.image.json \
      && pnpm exec tsc -p tsconfig.image.json; \
    fi

# The services, compiled: services/<name>/dist/main.js (+ tasks) and libs/db/dist/migrate-cli.js.
RUN node deploy/image/build-js.mjs

# The web console, bundled by Vite into web/console/dist (static files the gateway serves at /console/): built here,
# where the dev dependencies are, and copied into the image as files only (web/ has no run-time dependencies).
RUN pnpm --filter @dam/console build

# ---- prod: production dependencies only (no tsx, esbuild or TypeScript), and no TypeScript sources -------------
FROM build AS prod
RUN sh deploy/image/prune-prod.sh \
 && find libs/*/src services/*/src -type f -name '*.ts' -delete \
 && if node -e "require.resolve('tsx')" 2>/dev/null; then echo "tsx is still installed" >&2; exit 1; fi

# ---- files: /app as the images hold it (owned by root, read-only to the service: nothing under /app is written) ---
FROM scratch AS files
COPY --from=prod /app/package.json /app/
COPY --from=prod /app/node_modules /app/node_modules
COPY --from=prod /app/libs /app/libs
COPY --from=prod /app/services /app/services
# The gateway serves the OpenAPI document from docs/ (services/gateway/src/http/openapi.routes.ts).
COPY --from=prod /app/docs/openapi.yaml /app/docs/openapi.yaml
# ... and the built web console (services/gateway/src/http/console.routes.ts; without it /console/ answers 503).
COPY --from=build /app/web/console/dist /app/web/console/dist
COPY --from=prod /app/deploy/image/run-service /app/deploy/image/run-service

# ---- os: the run-time system both targets share (before the app's files, so a code change does not reinstall it)
FROM ${NODE_IMAGE} AS os
# tini as PID 1: forwards SIGTERM to the service (which drains on its own) and reaps children (ffmpeg, tesseract).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 dam \
 && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin dam \
 && install -d -o 10001 -g 10001 -m 0700 /var/cache/dam
# HOST: listen on the pod's address (the services default to loopback). TMPDIR/HOME/XDG_CACHE_HOME: every run-time
# write (work folders, fontconfig's cache) goes to the /tmp volume.
# CDN_CACHE_DIR is a folder inside the /var/cache/dam volume, not the mount point: link-signing empties the folder
# at start by removing it, and a mount point cannot be removed (EBUSY).
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    TMPDIR=/tmp \
    HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    CDN_CACHE_DIR=/var/cache/dam/cdn
WORKDIR /app
ENTRYPOINT ["tini", "--", "/app/deploy/image/run-service"]
USER 10001:10001

# ---- os-media: + ffmpeg/ffprobe (transcode; upload's video metadata) and tesseract with English (addon) ----------
FROM os AS os-media
USER root
# ca-certificates: ffprobe reads stored videos over presigned https URLs with the system's trust store.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tesseract-ocr tesseract-ocr-eng ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && ffmpeg -hide_banner -version | head -n 1 \
 && tesseract --list-langs
USER 10001:10001

# ---- media: every service, with the media tools ----------------------------------------------------------------
FROM os-media AS media
COPY --from=files /app /app

# ---- runtime (the default target): every service, without the media tools ------------------------------------
FROM os AS runtime
COPY --from=files /app /app
