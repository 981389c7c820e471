# Sourced by deploy/local/up and down: paths, ports, the pinned Node.js on PATH and the one environment every
# service receives.
# Each service also gets its own PORT and DATABASE_URL (dam_<service>); see docs/operations.md.

DAM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
mkdir -p "${DAM_DATA_DIR:-$DAM_ROOT/.data}"
DAM_DATA=$(cd "${DAM_DATA_DIR:-$DAM_ROOT/.data}" && pwd)
DAM_INFRA="$DAM_ROOT/deploy/infra"
# The project's pinned Node.js first on PATH once installed (deploy/local/up installs it before starting anything).
# shellcheck source=../infra/node-env.sh
DAM_NODE_OPTIONAL=1 . "$DAM_INFRA/node-env.sh"

DAM_ALL_SERVICES=(gateway upload link-signing auth metadata search conversion transcode addon webhook)
declare -A DAM_PORT=(
  [gateway]=8080 [upload]=8081 [link-signing]=8082 [auth]=8090 [metadata]=8091
  [search]=8092 [conversion]=8093 [transcode]=8094 [addon]=8095 [webhook]=8096
)
# DAM_SERVICES="auth metadata" limits which services up/down handle (all ten by default).
read -r -a DAM_SERVICES <<<"${DAM_SERVICES:-${DAM_ALL_SERVICES[*]}}"

# The nginx cache tier in front of link-signing's edge (deploy/cache): {cdn} as users reach it, and its purge
# endpoint (loopback, link-signing only). {cdn} is http://127.0.0.1:8082 either way: with the tier, nginx listens
# there and link-signing's edge moves to 8083; DAM_CDN_TIER=0 leaves the tier out and link-signing is {cdn} itself.
DAM_CDN_TIER=${DAM_CDN_TIER:-1}
CDN_TIER_PORT=8082
CDN_TIER_PURGE_PORT=8084
if [ "$DAM_CDN_TIER" = 1 ]; then DAM_PORT[link-signing]=8083; fi
NATS_PORT=4222
NATS_MONITOR_PORT=8222
S3_PORT=7480
S3_LOCAL_ACCESS_KEY=localaccess
S3_LOCAL_SECRET_KEY=localsecret123
ADMIN_EMAIL_DEFAULT=admin@example.com
ADMIN_PASSWORD_DEFAULT=admin-password

# link-signing -> LINK_SIGNING
dam_var_name() { local v=${1//-/_}; echo "${v^^}"; }
# link-signing -> dam_link_signing
dam_db_name() { echo "dam_${1//-/_}"; }
dam_pg_port() { cat "$DAM_DATA/run/pg-port" 2>/dev/null || true; }

# Secrets are generated on first use and kept, so tokens survive restarts. Only their owner may read them:
# the umask covers the files as they are created (the subshell used to set it after the file was opened).
dam_secrets() {
  local f="$DAM_DATA/secrets.env"
  if [ ! -f "$f" ]; then
    mkdir -p "$DAM_DATA"
    (
      umask 077
      echo "JWT_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >"$f"
    )
  fi
  # Keys added after a data folder was first made are appended, never regenerated.
  if ! grep -q '^LINK_SIGNING_KEYS=' "$f"; then
    echo "LINK_SIGNING_KEYS=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" >>"$f"
  fi
  chmod 600 "$f"
  # shellcheck disable=SC1090
  . "$f"
  # One ES256 key pair per service (deploy/local/service-keys.ts; rotation steps are documented there).
  (cd "$DAM_ROOT" && DAM_DATA="$DAM_DATA" node --import tsx deploy/local/service-keys.ts env "$DAM_DATA/secrets/service-keys.env")
  # shellcheck disable=SC1091
  . "$DAM_DATA/secrets/service-keys.env"
}

# NATS identities (deploy/local/nats-users.ts): the server's config with public keys and permissions, and a
# seed per identity (NATS_NKEY_SEED_<IDENTITY>); outside systems use theirs (NATS_NKEY_SEED_SUBSCRIBER_EXAMPLE, and one per name in NATS_SUBSCRIBERS).
DAM_NATS_CONF_FILE=secrets/nats-auth.conf
dam_nats_users() {
  mkdir -p "$DAM_DATA"
  (cd "$DAM_ROOT" && DAM_DATA="$DAM_DATA" node --import tsx deploy/local/nats-users.ts \
    "$DAM_DATA/$DAM_NATS_CONF_FILE" "$DAM_DATA/secrets/nats-users.env")
  # shellcheck disable=SC1091
  . "$DAM_DATA/secrets/nats-users.env"
}

# The NATS seed of one service (empty for services that do not use NATS).
dam_nats_seed() { local v="NATS_NKEY_SEED_$(dam_var_name "$1")"; echo "${!v:-}"; }

# Logs may hold request details: a folder and files only their owner can read, whoever created them first.
dam_prepare_logs() {
  local svc
  umask 077
  mkdir -p "$DAM_DATA/logs"
  chmod 700 "$DAM_DATA/logs"
  for svc in "${DAM_ALL_SERVICES[@]}"; do
    touch "$DAM_DATA/logs/$svc.log"
    chmod 600 "$DAM_DATA/logs/$svc.log"
  done
}

# The key of one service, for its start line: SERVICE_KEY_<SERVICE>.
dam_service_key() { local v="SERVICE_KEY_$(dam_var_name "$1")"; echo "${!v}"; }

# Exports the environment shared by every service (needs the PostgreSQL port chosen by up).
dam_export_env() {
  local svc
  dam_secrets
  export NODE_ENV=${NODE_ENV:-development} HOST=127.0.0.1 LOG_LEVEL=${LOG_LEVEL:-info}
  export JWT_SECRET SERVICE_TRUSTED_KEYS
  export NATS_URL="nats://127.0.0.1:$NATS_PORT"
  export S3_ENDPOINT="http://127.0.0.1:$S3_PORT" S3_ACCESS_KEY=$S3_LOCAL_ACCESS_KEY S3_SECRET_KEY=$S3_LOCAL_SECRET_KEY
  export S3_BUCKET=dam-assets S3_REGION=us-east-1
  export ADMIN_EMAIL=${ADMIN_EMAIL:-$ADMIN_EMAIL_DEFAULT} ADMIN_PASSWORD=${ADMIN_PASSWORD:-$ADMIN_PASSWORD_DEFAULT}
  # Empty, as in production: naming 127.0.0.1 here would let every tenant admin point webhooks at any loopback port
  # (the services, NATS monitoring) and read the answers' status in the deliveries log. To try webhooks against a
  # receiver on this machine, name its port for that run: WEBHOOK_ALLOW_HOSTS=127.0.0.1:9000 (a host:port entry
  # admits that port only, however the host is spelt; a bare host admits all of its ports).
  export WEBHOOK_ALLOW_HOSTS=${WEBHOOK_ALLOW_HOSTS:-}
  export MAX_UPLOAD_BYTES=${MAX_UPLOAD_BYTES:-5368709120}
  export PG_BASE_URL="postgres://postgres@127.0.0.1:$(dam_pg_port)"
  # <SERVICE>_URL for every service: how services find each other.
  for svc in "${DAM_ALL_SERVICES[@]}"; do
    export "$(dam_var_name "$svc")_URL=http://127.0.0.1:${DAM_PORT[$svc]}"
  done
  # The three public addresses of the contract ({base}, {upload}, {cdn}), for links a service hands out.
  export PUBLIC_BASE_URL=$GATEWAY_URL PUBLIC_UPLOAD_URL=$UPLOAD_URL PUBLIC_CDN_URL=$LINK_SIGNING_URL
  if [ "$DAM_CDN_TIER" = 1 ]; then
    PUBLIC_CDN_URL="http://127.0.0.1:$CDN_TIER_PORT"
    # link-signing purges the tier's copies of replaced, deleted and purged assets.
    export CDN_TIER_PURGE_URLS="http://127.0.0.1:$CDN_TIER_PURGE_PORT/purge"
  fi
}
