/**
 * External S3 (issue 31: "external S3 as the production default with the per-service policies"): the same per-service
 * policies the bundled MinIO's users get, as IAM documents for any bucket, from `k8s:s3-policies`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { BUCKET } from '../k8s/object-store';
import { servicePolicies } from '../k8s/s3-policies';
import { ROOT } from './k8s-render';

const actionsOf = (policy: { Statement: Array<{ Action: string[] }> }) => policy.Statement.flatMap((s) => s.Action);
const resourcesOf = (policy: { Statement: Array<{ Resource?: string[] }> }) => policy.Statement.flatMap((s) => s.Resource ?? []);

describe('k8s:s3-policies', () => {
  it('gives every service that touches the bucket its own policy, on the named bucket only, with S3 actions only', () => {
    const policies = servicePolicies('acme-dam');
    expect([...policies.keys()].sort()).toEqual(['dam-addon', 'dam-conversion', 'dam-link-signing', 'dam-metadata', 'dam-transcode', 'dam-upload']);
    for (const [name, policy] of policies) {
      expect({ name, foreign: resourcesOf(policy).filter((r) => r !== 'arn:aws:s3:::acme-dam' && !r.startsWith('arn:aws:s3:::acme-dam/')) }).toEqual({
        name,
        foreign: [],
      });
      // MinIO's own admin actions (the metrics user's) are not IAM's, and no service needs one.
      expect({ name, actions: actionsOf(policy).filter((a) => !a.startsWith('s3:')) }).toEqual({ name, actions: [] });
    }
    // The internet-facing edge only reads; only metadata touches the bucket policy.
    expect(actionsOf(policies.get('dam-link-signing')!).filter((a) => !['s3:GetObject', 's3:GetBucketLocation', 's3:ListBucket'].includes(a))).toEqual([]);
    const withBucketPolicy = [...policies].filter(([, p]) => actionsOf(p).includes('s3:PutBucketPolicy')).map(([n]) => n);
    expect(withBucketPolicy).toEqual(['dam-metadata']);
    // Set Public Access copies into public/ and removes the copies there; the policy is written, never deleted (issue 33).
    const metadata = policies.get('dam-metadata')!;
    const on = (resource: string) => metadata.Statement.filter((s) => s.Resource?.includes(resource)).flatMap((s) => s.Action);
    expect(on('arn:aws:s3:::acme-dam/public/*').sort()).toEqual(['s3:AbortMultipartUpload', 's3:DeleteObject', 's3:ListMultipartUploadParts', 's3:PutObject']);
    expect(actionsOf(metadata)).not.toContain('s3:DeleteBucketPolicy');
  });

  it('are, for the bundled bucket, exactly the policies the minio-users Job gives MinIO', () => {
    const minio = parseAllDocuments(readFileSync(path.join(ROOT, 'k8s/base/minio.yaml'), 'utf8')).map(
      (d) => d.toJSON() as { kind?: string; data?: Record<string, string> } | null,
    );
    const files: Record<string, string> = minio.find((o) => o?.kind === 'ConfigMap' && Object.keys(o.data ?? {}).some((k) => k.endsWith('.json')))?.data ?? {};
    for (const [name, policy] of servicePolicies(BUCKET)) expect({ name, policy: JSON.parse(files[`${name}.json`] ?? 'null') }).toEqual({ name, policy });
  });

  it('refuses a name S3 refuses, and writes one file per policy with --out', () => {
    expect(() => servicePolicies('Not_A_Bucket')).toThrow(/not an S3 bucket name/);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-s3-policies-'));
    try {
      execFileSync(path.join(ROOT, 'node_modules', '.bin', 'tsx'), [path.join(ROOT, 'deploy', 'k8s', 's3-policies.ts'), '--bucket', 'acme-dam', '--out', dir], {
        encoding: 'utf8',
      });
      expect(readdirSync(dir).sort()).toEqual([...servicePolicies('acme-dam').keys()].map((n) => `${n}.json`).sort());
      expect(JSON.parse(readFileSync(path.join(dir, 'dam-upload.json'), 'utf8'))).toEqual(servicePolicies('acme-dam').get('dam-upload'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
