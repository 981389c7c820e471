/**
 * The object store's users (security review F8): every service that touches the bucket has its own MinIO user,
 * whose policy allows what that service does there and nothing more; the root user stays with MinIO and with the
 * Job that makes the users (`minio-users`, in k8s/base/minio.yaml). What each service may do is `s3` in
 * deploy/k8s/services.ts, read from its storage calls (services/<name>/src):
 * - `originals/<group>/<asset>[-<token>]`: written by upload (and removed when an upload fails or is reaped),
 *   removed by metadata's housekeeping; read by all the others.
 * - `conversions/<group>/<asset>/<checksum>/...`: written by conversion, transcode (with its `_transcode/` markers),
 *   addon (background removal) and metadata (Add Conversion); removed by metadata. Conversion may also remove
 *   its own transform cache (`conversions/.../_t/`), whose old variants it prunes.
 * - `tus/`: upload's resumable uploads (the tus S3 store: objects, `.info` files, multipart uploads it sweeps).
 * - `exports/<group>/bulk-delete-<job>/`: Delete - Bulk's data export (the deleted assets' records), written and
 *   read by metadata alone, which serves it through `GET /api/v1/jobs/{job_id}/export`.
 * - `public/<group>/<asset>/<token>/...`: Set Public Access's copies (server-side CopyObject from `originals/` and
 *   `conversions/`), written and removed by metadata alone; anonymous clients read them through the bucket policy.
 * - The bucket's own policy is written by metadata alone: one constant statement making `public/*` anonymously
 *   readable (written at start when it differs; never a list of objects, never deleted).
 * Every user may also find the bucket and list its keys (HeadBucket, which the readiness checks use, is a
 * ListBucket in S3's terms: it cannot be limited to a prefix without breaking them); keys name groups and
 * assets, never bytes.
 */

/** The one bucket (S3_BUCKET in the ConfigMap), named in the policies: change it here, then regenerate. */
export const BUCKET = 'dam-assets';

// Key prefixes; a `*` matches within a key, so the last one is the transform cache (`_t/`) of every asset.
export type Prefix = 'originals/' | 'conversions/' | 'tus/' | 'conversions/*/_t/' | 'exports/' | 'public/';

export interface S3Access {
  /** Objects it reads (GET, HEAD, presigned GETs: a presigned URL carries its signer's rights). */
  read: Prefix[];
  /** Objects it writes (PUT and multipart uploads). */
  write?: Prefix[];
  /** Objects it removes. */
  remove?: Prefix[];
  /** Lists the bucket's multipart uploads (the tus store's sweep of expired uploads). */
  listUploads?: boolean;
  /** Reads and writes the bucket's policy (metadata's one statement on `public/*`; it never deletes it). */
  bucketPolicy?: boolean;
}

export interface PolicyDocument {
  Version: '2012-10-17';
  Statement: Array<{ Sid: string; Effect: 'Allow'; Action: string[]; Resource?: string[] }>;
}

/**
 * The policy of one service: its `s3` entry, as IAM statements on the one bucket (`bucket`, BUCKET unless an external
 * S3 names another): MinIO's users take them as they are, and so does an IAM user or role of AWS S3.
 */
export function s3Policy(access: S3Access, bucket: string = BUCKET): PolicyDocument {
  const bucketArn = `arn:aws:s3:::${bucket}`;
  const objects = (prefixes: readonly Prefix[]) => prefixes.map((p) => `${bucketArn}/${p}*`);
  const statement: PolicyDocument['Statement'] = [
    {
      Sid: 'Bucket',
      Effect: 'Allow',
      Action: [
        's3:GetBucketLocation',
        's3:ListBucket',
        ...(access.listUploads ? ['s3:ListBucketMultipartUploads'] : []),
        ...(access.bucketPolicy ? ['s3:GetBucketPolicy', 's3:PutBucketPolicy'] : []),
      ],
      Resource: [bucketArn],
    },
    { Sid: 'Read', Effect: 'Allow', Action: ['s3:GetObject'], Resource: objects(access.read) },
  ];
  if (access.write?.length) {
    statement.push({ Sid: 'Write', Effect: 'Allow', Action: ['s3:PutObject', 's3:AbortMultipartUpload', 's3:ListMultipartUploadParts'], Resource: objects(access.write) });
  }
  if (access.remove?.length) statement.push({ Sid: 'Remove', Effect: 'Allow', Action: ['s3:DeleteObject'], Resource: objects(access.remove) });
  return { Version: '2012-10-17', Statement: statement };
}

/** Prometheus' user: the cluster metrics (MINIO_PROMETHEUS_AUTH_TYPE=jwt), with a token made from its keys. */
export const METRICS_POLICY: PolicyDocument = { Version: '2012-10-17', Statement: [{ Sid: 'Metrics', Effect: 'Allow', Action: ['admin:Prometheus'] }] };
export const METRICS_USER = 'metrics';

/** The MinIO policy's name for a user (a service's name, or `metrics`). */
export const policyName = (user: string): string => `dam-${user}`;

/**
 * The Job's script. It waits for MinIO, makes the bucket, then for each user its policy (created or replaced),
 * the user (created, or its secret key replaced) and the attachment. Safe to run again: rerunning it after new
 * Secrets were applied rotates the keys and updates the policies.
 * `users`: policy name and the variables holding the user's access and secret keys.
 */
export function minioUsersScript(users: Array<{ policy: string; accessVar: string; secretVar: string }>): string {
  return [
    'set -eu',
    'until mc admin info dam >/dev/null 2>&1; do echo "waiting for MinIO"; sleep 5; done',
    `mc mb --ignore-existing "dam/${BUCKET}"`,
    // Shell built-ins and mc only: the mc image is a minimal one.
    'user() {',
    '  mc admin policy create dam "$1" "/policies/$1.json"',
    '  mc admin user add dam "$2" "$3"',
    '  # Attaching a policy that is attached already fails: then the user must show it.',
    '  if ! mc admin policy attach dam "$1" --user "$2"; then',
    '    case "$(mc admin user info dam "$2")" in *"$1"*) ;; *) echo "policy $1 not attached" >&2; exit 1 ;; esac',
    '  fi',
    '}',
    ...users.map((u) => `user ${u.policy} "$${u.accessVar}" "$${u.secretVar}"`),
    'echo "object-store users ready"',
    '',
  ].join('\n');
}
