/**
 * The per-service object-store policies for an S3 other than the bundled MinIO (AWS S3, or any S3 with IAM-style
 * policies): one IAM policy document per service that touches the bucket, allowing what that service does there and
 * nothing more (deploy/k8s/services.ts `s3`, the same rules the `minio-users` Job gives MinIO's users). Give each to
 * that service's own IAM user (or role), and its keys to the service (docs/operations.md, "External S3").
 *
 *   pnpm --filter @dam/deploy k8s:s3-policies --bucket my-dam-assets [--out ./policies]
 *
 * Without --out, prints `{ "dam-<service>": <policy>, ... }` as JSON; with it, writes `dam-<service>.json` files.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BUCKET, policyName, s3Policy, type PolicyDocument } from './object-store';
import { SERVICES } from './services';

/** A bucket name S3 accepts (3-63 lowercase letters, digits, dots and hyphens, starting and ending alphanumeric). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** Every service user's policy for `bucket`, by policy name (`dam-<service>`). */
export function servicePolicies(bucket: string = BUCKET): Map<string, PolicyDocument> {
  if (!BUCKET_NAME.test(bucket)) throw new Error(`not an S3 bucket name: ${bucket}`);
  return new Map(SERVICES.flatMap((s) => (s.s3 ? [[policyName(s.name), s3Policy(s.s3, bucket)] as const] : [])));
}

if (require.main === module) {
  const { values } = parseArgs({ options: { bucket: { type: 'string' }, out: { type: 'string' } } });
  try {
    const policies = servicePolicies(values.bucket ?? BUCKET);
    if (values.out) {
      mkdirSync(values.out, { recursive: true });
      for (const [name, policy] of policies) writeFileSync(path.join(values.out, `${name}.json`), `${JSON.stringify(policy, null, 2)}\n`);
      console.log(`wrote ${policies.size} policies to ${values.out}`);
    } else process.stdout.write(`${JSON.stringify(Object.fromEntries(policies), null, 2)}\n`);
  } catch (error) {
    console.error(`k8s:s3-policies: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(2);
  }
}
