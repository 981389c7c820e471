/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * k8s/ proven without a cluster: the base is what the generator makes, every overlay builds with kubectl's
 * kustomize, every object it yields is valid against the Kubernetes (and KEDA) OpenAPI schemas, and the rules of the
 * issue hold: probes, limits, non-root and read-only pods, no secret in a ConfigMap, every pod behind a
 * NetworkPolicy, every variable each service's config requires provided, every Secret they read generated, each
 * service its own object-store user with the least it needs (never MinIO's root user), the object store's admin API
 * and metrics kept from the internet.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { PriorityClass } from 'kubernetes-models/scheduling.k8s.io/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { natsPermissions } from '@dam/events';
import { BASE_DIR, BUCKET, INGRESS_NAMESPACE, MINIO_ROOT_SECRET, renderBase } from '../k8s/generate';
import { policyName, type PolicyDocument } from '../k8s/object-store';
import { generateSecrets } from '../k8s/secrets';
import { selects } from './k8s-render';
import { SERVICES, type ServiceName } from '../k8s/services';
import { CONFIG_LOADERS } from './config-loaders';

const ROOT = path.resolve(__dirname, '..', '..');
const OVERLAYS = ['dev', 'prod'] as const;

const MODELS: Record<string, { validate(): void } & (new (o: any) => { validate(): void })> = {
  'v1/ConfigMap': ConfigMap as any,
  'v1/Secret': Secret as any,
  'v1/Service': Service as any,
  'v1/Namespace': Namespace as any,
  'v1/ServiceAccount': ServiceAccount as any,
  'scheduling.k8s.io/v1/PriorityClass': PriorityClass as any,
  'apps/v1/Deployment': Deployment as any,
  'apps/v1/StatefulSet': StatefulSet as any,
  'batch/v1/Job': Job as any,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler as any,
  'networking.k8s.io/v1/Ingress': Ingress as any,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy as any,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as any,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject as any,
};

const build = (overlay: string): any[] =>
  parseAllDocuments(execFileSync('kubectl', ['kustomize', path.join(ROOT, 'k8s', 'overlays', overlay)], { encoding: 'utf8' }))
    .map((d) => d.toJSON())
    .filter(Boolean);
const secrets = generateSecrets();
const secretData = (name: string): Record<string, string> | undefined => secrets.find((s) => s.metadata.name === name)?.stringData;
const podsOf = (objects: any[]) => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
/** Also the Jobs: run to completion, so without probes, but held to the same rules otherwise. */
const workloadsOf = (objects: any[]) => [...podsOf(objects), ...objects.filter((o) => o.kind === 'Job')];
const containersOf = (o: any): any[] => [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers];

it('k8s/base is what deploy/k8s/generate.ts makes from deploy/k8s/services.ts', () => {
  for (const [file, text] of Object.entries(renderBase())) expect([file, readFileSync(path.join(BASE_DIR, file), 'utf8')]).toEqual([file, text]);
});

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
  const named = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

  it('builds, and every object is valid against the Kubernetes and KEDA schemas', () => {
    expect(objects.length).toBeGreaterThan(50);
    for (const o of objects) {
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      if (!Model) throw new Error(`no schema known for ${o.apiVersion} ${o.kind}`);
      expect(() => new Model(o).validate()).not.toThrow();
      // Cluster-scoped objects (the PriorityClasses) have no namespace.
      expect(o.metadata.namespace).toBe(o.kind === 'PriorityClass' ? undefined : overlay === 'dev' ? 'dam-dev' : 'dam');
    }
    // The validation itself rejects what is wrong (a test that cannot fail is a defect).
    const broken = structuredClone(named('Deployment', 'gateway'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'eighty';
    expect(() => new Deployment(broken).validate()).toThrow();
  });

  it('gives every service a Deployment with probes, requests and limits, a Service, a PDB, and its migrations first', () => {
    for (const s of SERVICES) {
      const d = named('Deployment', s.name);
      expect(d).toBeDefined();
      const [main] = d.spec.template.spec.containers;
      expect(main.args).toEqual([s.name]);
      expect(main.readinessProbe.httpGet.path).toBe('/readyz');
      expect(main.livenessProbe.httpGet.path).toBe('/healthz');
      expect(named('Service', s.name)?.spec.ports[0]).toMatchObject({ port: 80, targetPort: 'http' });
      expect(named('PodDisruptionBudget', s.name)?.spec.selector.matchLabels).toEqual(d.spec.selector.matchLabels);
      // Longer than the drain the service is given, plus the preStop pause.
      const drain = Number(main.env.find((e: any) => e.name === 'SHUTDOWN_TIMEOUT_MS').value) / 1000;
      expect(d.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(drain + main.lifecycle.preStop.sleep.seconds);
      const init = d.spec.template.spec.initContainers ?? [];
      expect(init.map((c: any) => c.args)).toEqual(s.database ? [['migrate', s.name]] : []);
    }
    for (const o of workloadsOf(objects)) {
      for (const c of containersOf(o)) {
        expect([o.metadata.name, c.name, c.resources?.requests?.cpu, c.resources?.requests?.memory, c.resources?.limits?.memory].every(Boolean)).toBe(true);
      }
    }
    for (const o of podsOf(objects)) {
      // NATS' auth-reloader serves nothing and has nothing to probe: it only signals the server.
      for (const c of o.spec.template.spec.containers.filter((c: any) => c.name !== 'auth-reloader')) {
        expect([o.metadata.name, Boolean(c.readinessProbe && c.livenessProbe)]).toEqual([o.metadata.name, true]);
      }
    }
  });

  it('runs every pod as non-root on a read-only root filesystem without privileges, writing only to its volumes', () => {
    expect(workloadsOf(objects).some((o) => o.kind === 'Job')).toBe(true);
    for (const o of workloadsOf(objects)) {
      const pod = o.spec.template.spec;
      expect([o.metadata.name, pod.securityContext.runAsNonRoot, pod.securityContext.runAsUser > 0, pod.automountServiceAccountToken]).toEqual([
        o.metadata.name,
        true,
        true,
        false,
      ]);
      for (const c of containersOf(o)) {
        expect([o.metadata.name, c.name, c.securityContext]).toEqual([
          o.metadata.name,
          c.name,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        ]);
      }
    }
    // Each service's writable places are emptyDirs with a size limit (its temp dir at least); Secrets are read-only.
    for (const s of SERVICES) {
      const d = named('Deployment', s.name);
      const mounts = d.spec.template.spec.containers[0].volumeMounts.map((m: any) => m.mountPath);
      expect(mounts).toContain('/tmp');
      for (const v of d.spec.template.spec.volumes) {
        if (v.emptyDir) expect(v.emptyDir.sizeLimit).toBeDefined();
        else
          expect([
            s.name,
            v.name,
            Boolean(v.secret),
            containersOf(d)
              .flatMap((c) => c.volumeMounts ?? [])
              .filter((m: any) => m.name === v.name && !m.readOnly),
          ]).toEqual([s.name, v.name, true, []]);
      }
    }
  });

  it('keeps secrets out of ConfigMaps, and generates every Secret key the manifests read', () => {
    const secretKeys = new Set(secrets.flatMap((s) => Object.keys(s.stringData)));
    for (const cm of byKind('ConfigMap')) {
      for (const [key, value] of Object.entries(cm.data ?? {})) {
        expect([cm.metadata.name, key, secretKeys.has(key) || /SECRET|PASSWORD|SEED|PRIVATE|TOKEN/i.test(key)]).toEqual([cm.metadata.name, key, false]);
        expect(String(value)).not.toMatch(/"d":|BEGIN [A-Z ]*PRIVATE KEY|^SU[A-Z2-7]{56}$/);
      }
    }
    const refs: Array<[string, string | undefined]> = [];
    for (const o of workloadsOf(objects)) {
      for (const c of containersOf(o))
        for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) refs.push([e.valueFrom.secretKeyRef.name, e.valueFrom.secretKeyRef.key]);
      // An optional Secret is the operator's to make, when needed (the database's CA: dam-db-ca).
      for (const v of o.spec.template.spec.volumes ?? []) if (v.secret && !v.secret.optional) refs.push([v.secret.secretName, undefined]);
    }
    expect(refs.length).toBeGreaterThan(40);
    // Each service gets only the secrets it uses: the JWT secret goes to the edges and auth alone.
    const withJwt = podsOf(objects).filter((o) => containersOf(o).some((c) => (c.env ?? []).some((e: any) => e.name === 'JWT_SECRET')));
    expect(withJwt.map((o) => o.metadata.name).sort()).toEqual(['auth', 'gateway', 'upload']);
    for (const [name, key] of refs) {
      const data = secretData(name);
      expect([name, key, data !== undefined && (key === undefined || key in data)]).toEqual([name, key, true]);
    }
  });

  it("provides every variable each service's configuration requires (its own loader accepts the environment)", () => {
    const config = named('ConfigMap', byKind('ConfigMap').find((c) => c.metadata.name.startsWith('dam-config'))?.metadata.name);
    for (const s of SERVICES) {
      const [main] = named('Deployment', s.name).spec.template.spec.containers;
      const env: Record<string, string> = { ...config.data };
      for (const e of main.env)
        env[e.name] = e.value ?? (secretData(e.valueFrom.secretKeyRef.name) as Record<string, string>)[e.valueFrom.secretKeyRef.key] ?? '';
      expect(main.envFrom).toEqual([{ configMapRef: { name: config.metadata.name } }]);
      expect(() => CONFIG_LOADERS[s.name](env)).not.toThrow();
      // The loader does reject an environment that lacks what it needs.
      if (s.database) expect(() => CONFIG_LOADERS[s.name]({ ...env, DATABASE_URL: undefined })).toThrow(/DATABASE_URL/);
    }
  });

  it('lets only gateway, upload and the cache tier in front of the edge (and the object store, for presigned links) take traffic from outside, and each internal service only its callers', () => {
    const policies = byKind('NetworkPolicy');
    expect(policies.find((p) => p.metadata.name === 'default-deny-ingress')?.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress'] });
    const fromIngressPolicies = policies.filter((p) =>
      (p.spec.ingress ?? []).some((r: any) =>
        (r.from ?? []).some((f: any) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === INGRESS_NAMESPACE),
      ),
    );
    const fromIngress = podsOf(objects)
      .filter((o) => fromIngressPolicies.some((p) => selects(p.spec.podSelector, o.spec.template.metadata.labels)))
      .map((o) => o.metadata.name)
      .sort();
    // {cdn} reaches link-signing through the cache tier only (issue 33).
    expect(fromIngress).toEqual(['cdn-cache', 'gateway', 'minio', 'upload']);
    for (const o of podsOf(objects)) {
      const app = o.spec.template.metadata.labels['app.kubernetes.io/name'];
      expect([app, policies.some((p) => p.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === app)]).toEqual([app, true]);
    }
    for (const s of SERVICES) {
      const policy = policies.find((p) => p.metadata.name === s.name);
      const callers = policy.spec.ingress
        .flatMap((r: any) => (r.from ?? []).map((f: any) => f.podSelector?.matchLabels?.['app.kubernetes.io/name']))
        .filter(Boolean)
        .sort();
      expect([s.name, callers]).toEqual([s.name, [...s.callers, ...(s.name === 'link-signing' ? ['cdn-cache'] : [])].sort()]);
    }
    // Every HTTP call between services is allowed: the URL a service is configured with names a callee that lists it.
    const calls: Array<[string, string]> = [
      ['gateway', 'auth'],
      ['gateway', 'metadata'],
      ['gateway', 'search'],
      ['gateway', 'link-signing'],
      ['gateway', 'webhook'],
      ['upload', 'auth'],
      ['upload', 'metadata'],
      ['metadata', 'auth'],
      ['metadata', 'conversion'],
      ['auth', 'metadata'],
      ['link-signing', 'auth'],
      ['link-signing', 'metadata'],
      ['transcode', 'auth'],
      ['transcode', 'metadata'],
      ['conversion', 'auth'],
      ['webhook', 'auth'],
    ];
    for (const [caller, callee] of calls)
      expect([caller, callee, SERVICES.find((s) => s.name === callee)?.callers.includes(caller as ServiceName)]).toEqual([caller, callee, true]);
  });

  it('sets TRUST_PROXY wherever NODE_ENV=production: the one ingress hop for what the Ingress reaches (two for the edge behind the cache tier), none elsewhere', () => {
    const configMaps = byKind('ConfigMap');
    const envOf = (c: any): Record<string, string> => {
      const env: Record<string, string> = {};
      for (const f of c.envFrom ?? []) Object.assign(env, configMaps.find((cm) => cm.metadata.name === f.configMapRef?.name)?.data ?? {});
      for (const e of c.env ?? []) env[e.name] = e.value ?? `<${e.valueFrom?.secretKeyRef?.name ?? 'ref'}>`;
      return env;
    };
    const behindIngress = new Set(byKind('Ingress').flatMap((i) => i.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => p.backend.service.name))));
    expect([...behindIngress].filter((n) => n !== 'minio').sort()).toEqual(['cdn-cache', 'gateway', 'upload']);
    // The cache tier's own upstream: the edge (its NetworkPolicies admit nothing else).
    expect(named('ConfigMap', 'cdn-cache').data['nginx.conf']).toMatch(/upstream edge \{\s*server link-signing:80;/);
    const seen: string[] = [];
    for (const o of podsOf(objects)) {
      for (const c of containersOf(o)) {
        const env = envOf(c);
        if (env.NODE_ENV !== 'production') continue;
        const served = behindIngress.has(o.metadata.name) && c === o.spec.template.spec.containers[0];
        // Exactly the ingress-nginx hop where the Ingress is in front (a client's own X-Forwarded-For never counts).
        const hops = o.metadata.name === 'link-signing' ? '2' : served ? '1' : 'none';
        expect([o.metadata.name, c.name, env.TRUST_PROXY]).toEqual([o.metadata.name, c.name, hops]);
        seen.push(`${o.metadata.name}/${c.name}`);
      }
    }
    expect(seen.length).toBeGreaterThanOrEqual(SERVICES.length);
  });

  it('routes only the API paths of {base}, {upload} and {cdn} (and the console of {base}) through the Ingress, uploads unbuffered and unlimited', () => {
    const paths = byKind('Ingress').flatMap((i) => i.spec.rules.flatMap((r: any) => r.http.paths.map((p: any) => `${p.backend.service.name}${p.path}`)));
    expect(paths.sort()).toEqual(['cdn-cache/api/v1/files', 'gateway/api', 'gateway/console', `minio/${BUCKET}`, 'upload/api']);
    expect(named('Ingress', 'dam-upload').metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/proxy-body-size': '0',
      'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
    });
  });

  describe('the object store (security review F8)', () => {
    const root = secretData(MINIO_ROOT_SECRET) as Record<string, string>;
    const s3Services = SERVICES.filter((s) => s.s3).map((s) => s.name);
    const policyOf = (name: string): PolicyDocument | undefined => {
      const text = named('ConfigMap', 'minio-policies')?.data?.[`${policyName(name)}.json`];
      return text === undefined ? undefined : JSON.parse(text);
    };
    const actionsOn = (policy: PolicyDocument | undefined, resource: RegExp) =>
      (policy?.Statement ?? []).filter((st) => (st.Resource ?? []).some((r) => resource.test(r))).flatMap((st) => st.Action);
    const objectArn = (prefix: string) => `arn:aws:s3:::${BUCKET}/${prefix}*`;

    it('gives every service that uses the bucket its own user, never the root user', () => {
      expect([...s3Services].sort()).toEqual(['addon', 'conversion', 'link-signing', 'metadata', 'transcode', 'upload']);
      const accessKeys: string[] = [];
      for (const o of byKind('Deployment')) {
        for (const c of containersOf(o)) {
          const secretsRead = [
            ...(c.env ?? []).map((e: any) => e.valueFrom?.secretKeyRef?.name),
            ...(c.envFrom ?? []).map((f: any) => f.secretRef?.name),
          ].filter(Boolean);
          expect([o.metadata.name, c.name, secretsRead.includes(MINIO_ROOT_SECRET)]).toEqual([o.metadata.name, c.name, false]);
          for (const e of c.env ?? []) {
            if (e.name !== 'S3_ACCESS_KEY' && e.name !== 'S3_SECRET_KEY') continue;
            // From the service's own Secret, and not the root user's keys under another name.
            expect([o.metadata.name, e.name, e.valueFrom?.secretKeyRef?.name]).toEqual([o.metadata.name, e.name, `dam-${o.metadata.name}`]);
            const value = secretData(e.valueFrom.secretKeyRef.name)?.[e.valueFrom.secretKeyRef.key];
            expect([o.metadata.name, e.name, value === root.MINIO_ROOT_USER || value === root.MINIO_ROOT_PASSWORD]).toEqual([o.metadata.name, e.name, false]);
            if (e.name === 'S3_ACCESS_KEY') accessKeys.push(value as string);
          }
        }
        for (const v of o.spec.template.spec.volumes ?? []) expect([o.metadata.name, v.secret?.secretName]).not.toEqual([o.metadata.name, MINIO_ROOT_SECRET]);
      }
      expect(accessKeys).toHaveLength(s3Services.length);
      expect(new Set(accessKeys).size).toBe(accessKeys.length);
      // MinIO's limits on keys.
      for (const k of accessKeys) expect(k.length).toBeLessThanOrEqual(20);
      for (const s of s3Services) expect((secretData(`dam-${s}`)?.S3_SECRET_KEY ?? '').length).toBe(40);
    });

    it('makes each user with its policy in a Job, the only pod besides MinIO that reads the root user', () => {
      const job = named('Job', 'minio-users');
      expect(job).toBeDefined();
      const readers = workloadsOf(objects)
        .filter((o) => containersOf(o).some((c) => (c.env ?? []).some((e: any) => e.valueFrom?.secretKeyRef?.name === MINIO_ROOT_SECRET)))
        .map((o) => `${o.kind}/${o.metadata.name}`);
      expect(readers.sort()).toEqual(['Job/minio-users', 'StatefulSet/minio']);
      const [mc] = job.spec.template.spec.containers;
      const script: string = mc.command[2];
      expect(() => execFileSync('sh', ['-n', '-c', script])).not.toThrow();
      // The mc image is minimal: mc and the shell's built-ins only.
      expect(script).not.toMatch(/\b(sed|grep|awk|jq|curl)\b/);
      expect(script).toContain(`mc mb --ignore-existing "dam/${BUCKET}"`);
      // The bucket the policies name is the one the services use.
      expect(named('ConfigMap', byKind('ConfigMap').find((c) => c.metadata.name.startsWith('dam-config'))?.metadata.name).data.S3_BUCKET).toBe(BUCKET);
      for (const s of SERVICES.filter((x) => x.s3)) {
        const prefix = s.name.replace(/-/g, '_').toUpperCase();
        expect(script).toContain(`user ${policyName(s.name)} "$${prefix}_S3_ACCESS_KEY" "$${prefix}_S3_SECRET_KEY"`);
        // The variables hold the keys the service itself reads.
        const ref = (v: string) => mc.env.find((e: any) => e.name === v)?.valueFrom?.secretKeyRef;
        expect(ref(`${prefix}_S3_ACCESS_KEY`)).toEqual({ name: `dam-${s.name}`, key: 'S3_ACCESS_KEY' });
        expect(ref(`${prefix}_S3_SECRET_KEY`)).toEqual({ name: `dam-${s.name}`, key: 'S3_SECRET_KEY' });
        expect(policyOf(s.name)).toBeDefined();
      }
      // The Job may reach MinIO.
      const minioPolicy = named('NetworkPolicy', 'minio');
      const allowed = minioPolicy.spec.ingress
        .flatMap((r: any) => (r.from ?? []).map((f: any) => f.podSelector?.matchLabels?.['app.kubernetes.io/name']))
        .filter(Boolean);
      expect(allowed).toContain('minio-users');
    });

    it("runs the Job's script to the end with the Job's environment (mc stubbed), and fails when a policy is not attached", () => {
      const [mc] = named('Job', 'minio-users').spec.template.spec.containers;
      const env: Record<string, string> = {};
      for (const e of mc.env) {
        const ref = e.valueFrom?.secretKeyRef;
        env[e.name] = ref
          ? ((secretData(ref.name) as Record<string, string>)[ref.key] as string)
          : String(e.value).replace(/\$\((\w+)\)/g, (_m, v: string) => env[v] as string);
      }
      expect(env.MC_HOST_dam).toBe(`http://${root.MINIO_ROOT_USER}:${root.MINIO_ROOT_PASSWORD}@minio:9000`);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'dam-mc-'));
      try {
        // A stand-in for mc: logs its arguments; `policy attach` fails (attached already) when ATTACHED says so,
        // and `user info` then names the policies listed in INFO.
        writeFileSync(
          path.join(dir, 'mc'),
          '#!/bin/sh\necho "$*" >> "$LOG"\ncase "$*" in\n  "admin policy attach"*) [ -z "$ATTACHED" ] ;;\n  "admin user info"*) echo "PolicyName: $INFO" ;;\nesac\n',
          { mode: 0o755 },
        );
        const runScript = (extra: Record<string, string>) => {
          const log = path.join(dir, `log-${Object.keys(extra).join('-') || 'plain'}-${Math.random()}`);
          const result = spawnSync('sh', ['-c', mc.command[2]], {
            env: { PATH: `${dir}:/usr/bin:/bin`, LOG: log, ATTACHED: '', INFO: '', ...env, ...extra },
            encoding: 'utf8',
          });
          return { status: result.status, calls: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
        };
        const users = [
          ...s3Services.map((s) => [s, secretData(`dam-${s}`) as Record<string, string>] as const),
          [
            'metrics',
            {
              S3_ACCESS_KEY: secretData('dam-minio-metrics')?.MINIO_METRICS_ACCESS_KEY,
              S3_SECRET_KEY: secretData('dam-minio-metrics')?.MINIO_METRICS_SECRET_KEY,
            },
          ] as const,
        ];
        const first = runScript({});
        expect(first.status).toBe(0);
        expect(first.calls).toEqual([
          'admin info dam',
          `mb --ignore-existing dam/${BUCKET}`,
          ...users.flatMap(([name, keys]) => [
            `admin policy create dam ${policyName(name)} /policies/${policyName(name)}.json`,
            `admin user add dam ${keys.S3_ACCESS_KEY} ${keys.S3_SECRET_KEY}`,
            `admin policy attach dam ${policyName(name)} --user ${keys.S3_ACCESS_KEY}`,
          ]),
        ]);
        // Run again: attach fails as the policy is attached already, and the user's info shows it.
        expect(runScript({ ATTACHED: '1', INFO: [...s3Services, 'metrics'].map(policyName).join(' ') }).status).toBe(0);
        // A user whose policy is not attached stops the Job (it is retried).
        expect(runScript({ ATTACHED: '1', INFO: 'readwrite' }).status).not.toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('lets each user do only what its service does: the edge reads, writers write only their prefixes, nobody administers', () => {
      const WRITE = /^s3:(Put|Delete|Abort|Create|Replicate|Restore)|^s3:\*$|^\*$/;
      for (const s of s3Services) {
        const policy = policyOf(s) as PolicyDocument;
        for (const st of policy.Statement) {
          expect([s, st.Effect]).toEqual([s, 'Allow']);
          // Only this bucket and its objects, no wildcard actions, no admin rights.
          for (const r of st.Resource ?? []) expect([s, r.startsWith(`arn:aws:s3:::${BUCKET}`)]).toEqual([s, true]);
          for (const a of st.Action) expect([s, a, /\*|^admin:/.test(a)]).toEqual([s, a, false]);
        }
      }
      // The internet-facing edge: no write action at all.
      expect(
        policyOf('link-signing')
          ?.Statement.flatMap((st) => st.Action)
          .filter((a) => WRITE.test(a)),
      ).toEqual([]);
      // Who may write or remove where (from the storage calls in services/*/src).
      const writers = (prefix: string) =>
        s3Services.filter((s) => actionsOn(policyOf(s), new RegExp(`^${objectArn(prefix).replace(/[*]/g, '\\*')}$`)).includes('s3:PutObject')).sort();
      const removers = (prefix: string) =>
        s3Services.filter((s) => actionsOn(policyOf(s), new RegExp(`^${objectArn(prefix).replace(/[*]/g, '\\*')}$`)).includes('s3:DeleteObject')).sort();
      expect(writers('originals/')).toEqual(['upload']);
      expect(writers('tus/')).toEqual(['upload']);
      expect(writers('conversions/')).toEqual(['addon', 'conversion', 'metadata', 'transcode']);
      expect(removers('originals/')).toEqual(['metadata', 'upload']);
      expect(removers('conversions/')).toEqual(['metadata']);
      expect(removers('conversions/*/_t/')).toEqual(['conversion']);
      // Delete - Bulk's data export: metadata writes it and serves it; no other user even reads it (deleted records).
      expect(writers('exports/')).toEqual(['metadata']);
      const objectReaders = (prefix: string) =>
        s3Services.filter((s) => actionsOn(policyOf(s), new RegExp(`^${objectArn(prefix).replace(/[*]/g, '\\*')}$`)).includes('s3:GetObject')).sort();
      expect(objectReaders('exports/')).toEqual(['metadata']);
      // Only metadata (Set Public Access) touches the bucket policy, and it never deletes it: the policy is one
      // constant statement on public/*, where metadata alone writes and removes the published copies (issue 33).
      expect(s3Services.filter((s) => actionsOn(policyOf(s), new RegExp(`:::${BUCKET}$`)).some((a) => /BucketPolicy$/.test(a)))).toEqual(['metadata']);
      expect(s3Services.filter((s) => actionsOn(policyOf(s), new RegExp(`:::${BUCKET}$`)).includes('s3:DeleteBucketPolicy'))).toEqual([]);
      expect(writers('public/')).toEqual(['metadata']);
      expect(removers('public/')).toEqual(['metadata']);
      // Prometheus' user reads metrics only.
      expect(policyOf('metrics')?.Statement.flatMap((st) => st.Action)).toEqual(['admin:Prometheus']);
    });

    it('exposes only the bucket through the dam-s3 Ingress (no /minio/ admin API, no console), and MinIO metrics need a token', () => {
      const paths = named('Ingress', 'dam-s3').spec.rules.flatMap((r: any) => r.http.paths);
      expect(paths.length).toBeGreaterThan(0);
      for (const p of paths) {
        expect(p.path).toBe(`/${BUCKET}`);
        expect(p.backend.service.port).toEqual({ name: 'http' });
      }
      const toMinio = byKind('Ingress')
        .flatMap((i) => i.spec.rules.flatMap((r: any) => r.http.paths))
        .filter((p: any) => p.backend.service.name === 'minio');
      expect(toMinio.filter((p: any) => p.path === '/' || p.path.startsWith('/minio'))).toEqual([]);
      // The console's port has no Service.
      expect(
        byKind('Service')
          .filter((s) => s.metadata.name.startsWith('minio'))
          .flatMap((s) => s.spec.ports.map((p: any) => p.port)),
      ).not.toContain(9001);
      const env = named('StatefulSet', 'minio').spec.template.spec.containers[0].env;
      expect(env.find((e: any) => e.name === 'MINIO_PROMETHEUS_AUTH_TYPE')?.value).toBe('jwt');
    });
  });

  it('scales the workers on their own JetStream consumers (KEDA) and the edges on CPU', () => {
    const scaled = byKind('ScaledObject');
    expect(scaled.map((o) => o.metadata.name).sort()).toEqual(['addon', 'conversion', 'transcode', 'webhook']);
    for (const o of scaled) {
      const { stream, consumer, natsServerMonitoringEndpoint } = o.spec.triggers[0].metadata;
      expect(o.spec.triggers[0].type).toBe('nats-jetstream');
      // The overlay's namespace (a kustomize replacement), no cluster domain: KEDA's resolver completes it.
      expect(natsServerMonitoringEndpoint).toBe(`nats.${overlay === 'dev' ? 'dam-dev' : 'dam'}.svc:8222`);
      // The consumer is the one this service's NATS identity pulls from.
      expect(natsPermissions(o.metadata.name)?.publish).toContain(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`);
      expect(named('Deployment', o.metadata.name).spec.replicas).toBeUndefined();
    }
    expect(
      byKind('HorizontalPodAutoscaler')
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['gateway', 'upload']);
  });

  it('runs NATS as a 3-node JetStream cluster, MinIO distributed over 4 pods, PostgreSQL only in dev', () => {
    const nats = named('StatefulSet', 'nats');
    expect(nats.spec.replicas).toBe(3);
    const conf = named('ConfigMap', 'nats-config').data['nats.conf'];
    expect(conf).toMatch(/routes: \[nats:\/\/nats-0\.nats:6222, nats:\/\/nats-1\.nats:6222, nats:\/\/nats-2\.nats:6222\]/);
    expect(conf).toMatch(/include \.\/auth\/auth\.conf/);
    expect(named('ConfigMap', byKind('ConfigMap').find((c) => c.metadata.name.startsWith('dam-config'))?.metadata.name).data).toMatchObject({
      NATS_STREAM_REPLICAS: '3',
    });
    expect(secretData('dam-nats-auth')?.['auth.conf']).toMatch(/authorization/);
    expect(named('StatefulSet', 'minio').spec.replicas).toBe(4);
    expect(named('StatefulSet', 'minio').spec.template.spec.containers[0].args[1]).toBe(
      'http://minio-{0...3}.minio-hl.$(POD_NAMESPACE).svc.$(CLUSTER_DOMAIN)/data',
    );
    expect(Boolean(named('StatefulSet', 'postgres'))).toBe(overlay === 'dev');
  });
});
