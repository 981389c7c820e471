# Sourced by deploy/local/up: the local object store's users (security review F8).
# The {cdn} edge (link-signing), which faces the internet, reads with a read-only subuser of the store's owner
# (radosgw `subuser create --access=read`, made by deploy/infra/s3.sh): GET, HEAD, listing and presigned GETs work,
# PUT, DELETE and bucket-policy changes answer AccessDenied. The other services share the owner `localaccess`:
# locally radosgw (Pacific) cannot limit a writer to prefixes without a grant in the bucket policy, and Set Public
# Access owns that policy (it rewrites it whole). In Kubernetes every service has its own MinIO user (k8s/README.md).
S3_EDGE_ACCESS_KEY=localedge
S3_EDGE_SECRET_KEY=localedgesecret123

# The S3 keys one service starts with, as NAME=value words for `env` (none: the shared owner's, exported by env.sh).
# $2 is the store's folder: the edge's keys only when s3.sh made the read-only user there (not with MinIO).
dam_s3_keys() {
  if [ "$1" = link-signing ] && [ "$(cat "$2/readonly-user" 2>/dev/null)" = "$S3_EDGE_ACCESS_KEY" ]; then
    echo "S3_ACCESS_KEY=$S3_EDGE_ACCESS_KEY S3_SECRET_KEY=$S3_EDGE_SECRET_KEY"
  fi
}
