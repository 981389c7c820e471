/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The production form on one machine (issue 31): what each workload of the rendered dev overlay becomes here, read
 * from `kubectl kustomize k8s/overlays/dev` and the Secrets of deploy/k8s/secrets.ts, never copied by hand.
 *
 * Kubernetes gives every pod its own address and every Service a name on port 80; here every container runs on the
 * host's network (no podman DNS networks on these machines), each workload on its own loopback address 127.0.1.<n>,
 * the Service names mapped to those addresses in each container (`--add-host`), and nginx's stream module stands for
 * the Services' port mapping (`<service>:80` to the container's 8080, `minio:9000`, `postgres:5432`). The only
 * values that differ from the rendered ones are listed in OVERRIDES: everything else is the overlay's.
 */
import path from 'node:path';
import { bytesOf } from '../k8s/generate';
import { buildOverlay } from '../k8s/network-policy-eval';
import type { SecretObject } from '../k8s/secrets';

export const ROOT = path.resolve(__dirname, '..', '..');

/** A value of the rendered configuration that cannot hold on one host, and why. */
export const OVERRIDES = {
  HOST: 'each pod has its own network in Kubernetes (0.0.0.0 there); here each workload listens on its own loopback address',
} as const;
/** Added to each container for the test of the NetworkPolicies (DAM_PF_RECORD_FLOWS=0 leaves it out). */
export const ADDITIONS = {
  NODE_OPTIONS: '--import=/dam-flows/record-flows.mjs (deploy/local/record-flows.mjs, mounted read-only): one line per destination opened',
  DAM_RECORD_FLOWS: 'where that recorder writes (a host folder mounted at /dam-flows/out)',
  DAM_FLOW_SERVICE: 'the workload the recorder names',
} as const;

/** Where each workload listens here (DAM_PF_DIR/workloads.json), for the readers of the recorded connections. */
export interface Listeners {
  workloads: { name: string; address: string; port: number }[];
  /** The object store's own address (radosgw), where nginx sends the dam-s3 Ingress's requests. */
  s3: string;
}

/** Which workload listens at address:port, as the containers (or nginx) connect to it; undefined when none. */
export function workloadAt(l: Listeners, address: string, port: number): string | undefined {
  if (address === INFRA_ADDRESSES.postgres && port === 5432) return 'postgresql';
  if ((address === INFRA_ADDRESSES.minio && port === 9000) || `${address}:${port}` === l.s3) return 'minio';
  if ((INFRA_ADDRESSES.nats as readonly string[]).includes(address) && port === 4222) return 'nats';
  const w = l.workloads.find((x) => x.address === address);
  return w && (port === 80 || port === w.port) ? w.name : undefined;
}

export interface Container {
  name: string;
  image: string;
  args: string[];
  env: Record<string, string>;
  /** emptyDirs: mount path → size limit in bytes (the manifest's sizeLimit). */
  tmpfs: Record<string, number>;
  /** Secret volumes (the database CA): mount path. */
  dbCa?: string;
  readOnlyRoot: boolean;
  /** resources.limits: memory in bytes, CPU in cores (podman --memory, --cpus). */
  memoryLimit?: number;
  cpuLimit?: number;
}

export interface Workload {
  name: string;
  address: string;
  port: number;
  readyPath: string;
  user: number;
  group: number;
  fsGroup: number;
  init: Container[];
  main: Container;
  /**
   * The {cdn} cache tier (issue 33): its official nginx image is not on these machines, so Debian's nginx runs the
   * same configuration (deploy/cache) on the host at the workload's address, as radosgw stands in for MinIO.
   */
  hostNginx?: { purgePort: number };
}

export interface Route {
  host: string;
  path: string;
  service: string;
}
export interface IngressServer {
  name: string;
  hosts: string[];
  routes: Route[];
  bodySize: string;
  readTimeout?: string;
  sendTimeout?: string;
  requestBuffering: boolean;
}

export interface Form {
  namespace: string;
  workloads: Workload[];
  /** Service name → address (the Deployments', and postgres, minio, nats-<i>.nats). */
  hosts: Record<string, string>;
  ingresses: IngressServer[];
  natsConf: string;
  natsEnv: Record<string, string>;
  natsReplicas: number;
  /**
   * The NATS pods' sidecars as rendered (the auth-reloader): each its command and its mounts (mount path → volume
   * name), and the nats container's mounts, so the run maps each volume to one host folder for both.
   */
  natsSidecars: { name: string; command: string[]; mounts: Record<string, string> }[];
  natsMounts: Record<string, string>;
  /** The NATS pod's Secret volumes: volume name → Secret name (mounted as the kubelet does: run.ts mountSecret). */
  natsSecretVolumes: Record<string, string>;
  postgresInitSql: string;
  secrets: Map<string, Record<string, string>>;
}

export const INFRA_ADDRESSES = { postgres: '127.0.1.2', minio: '127.0.1.3', nats: ['127.0.1.4', '127.0.1.5', '127.0.1.6'] } as const;
const workloadAddress = (i: number) => `127.0.1.${10 + i}`;

/** The overlay as `kubectl kustomize` renders it; DAM_PF_K8S_DIR names another k8s/ tree (e.g. an older commit's). */
export const renderOverlay = (overlay = 'dev', k8sDir = process.env.DAM_PF_K8S_DIR ?? path.join(ROOT, 'k8s')): any[] => buildOverlay(k8sDir, overlay);

const cores = (q: string): number => (q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q));

/** Our image names for the manifests' (DAM_IMAGE_NAME of deploy/image/build-local.sh, tags runtime and media). */
export function localImage(image: string, base: string): string {
  if (/\/dam-media:/.test(image)) return `${base}:media`;
  if (/\/dam:/.test(image)) return `${base}:runtime`;
  throw new Error(`no local image for ${image}`);
}

export function buildForm(objects: any[], secretObjects: SecretObject[], imageBase: string): Form {
  const secrets = new Map(secretObjects.map((s) => [s.metadata.name, s.stringData as Record<string, string>]));
  const configMaps = new Map<string, Record<string, string>>(objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]));
  const namespace = objects.find((o) => o.kind === 'Deployment')?.metadata.namespace ?? 'default';
  const deployments = objects.filter((o) => o.kind === 'Deployment').sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const hosts: Record<string, string> = {
    postgres: INFRA_ADDRESSES.postgres,
    minio: INFRA_ADDRESSES.minio,
    'minio-hl': INFRA_ADDRESSES.minio,
    nats: INFRA_ADDRESSES.nats[0],
  };
  INFRA_ADDRESSES.nats.forEach((a, i) => (hosts[`nats-${i}.nats`] = a));

  const workloads = deployments.map((d, i): Workload => {
    const name = d.metadata.name as string;
    const address = workloadAddress(i);
    hosts[name] = address;
    // The headless <edge>-peers Services (RATE_LIMIT_PEERS) list the ready pods: here the one replica.
    if (objects.some((o) => o.kind === 'Service' && o.metadata.name === `${name}-peers`)) hosts[`${name}-peers`] = address;
    // The cache tier's headless purge Service (link-signing's CDN_TIER_PURGE_URLS): here its one replica.
    if (objects.some((o) => o.kind === 'Service' && o.metadata.name === `${name}-purge`)) hosts[`${name}-purge`] = address;
    const pod = d.spec.template.spec;
    const volumes = new Map<string, any>((pod.volumes ?? []).map((v: any) => [v.name, v]));
    const container = (c: any): Container => {
      const env: Record<string, string> = {};
      for (const from of c.envFrom ?? []) {
        if (!from.configMapRef) throw new Error(`${name}/${c.name}: envFrom other than a ConfigMap`);
        Object.assign(env, configMaps.get(from.configMapRef.name) ?? {});
      }
      for (const e of c.env ?? []) {
        if (e.value !== undefined) env[e.name] = String(e.value);
        else if (e.valueFrom?.secretKeyRef) {
          const v = secrets.get(e.valueFrom.secretKeyRef.name)?.[e.valueFrom.secretKeyRef.key];
          if (v === undefined)
            throw new Error(
              `${name}/${c.name}: ${e.name} reads ${e.valueFrom.secretKeyRef.name}.${e.valueFrom.secretKeyRef.key}, which deploy/k8s/secrets.ts does not make`,
            );
          env[e.name] = v;
        } else if (e.valueFrom?.configMapKeyRef) env[e.name] = configMaps.get(e.valueFrom.configMapKeyRef.name)?.[e.valueFrom.configMapKeyRef.key] ?? '';
        else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') env[e.name] = namespace;
        else throw new Error(`${name}/${c.name}: ${e.name} has a source this runner does not know`);
      }
      if ('HOST' in env) env.HOST = address;
      const tmpfs: Record<string, number> = {};
      let dbCa: string | undefined;
      for (const m of c.volumeMounts ?? []) {
        const v = volumes.get(m.name);
        if (v?.emptyDir) tmpfs[m.mountPath] = v.emptyDir.sizeLimit ? bytesOf(v.emptyDir.sizeLimit) : 64 * 2 ** 20;
        else if (v?.secret?.secretName === 'dam-db-ca') dbCa = m.mountPath;
        else throw new Error(`${name}/${c.name}: volume ${m.name} is neither an emptyDir nor the database CA`);
      }
      return {
        name: c.name,
        image: localImage(c.image, imageBase),
        args: c.args ?? [],
        env,
        tmpfs,
        ...(dbCa ? { dbCa } : {}),
        readOnlyRoot: c.securityContext?.readOnlyRootFilesystem === true,
        ...(c.resources?.limits?.memory ? { memoryLimit: bytesOf(c.resources.limits.memory) } : {}),
        ...(c.resources?.limits?.cpu ? { cpuLimit: cores(String(c.resources.limits.cpu)) } : {}),
      };
    };
    const main = pod.containers[0];
    const probe = main.readinessProbe?.httpGet;
    const port = main.ports?.find((p: any) => p.name === (probe?.port ?? 'http'))?.containerPort;
    if (!probe || typeof port !== 'number') throw new Error(`${name}: no HTTP readiness probe on a named port`);
    const sc = pod.securityContext ?? {};
    const base = { name, address, port, readyPath: probe.path, user: sc.runAsUser, group: sc.runAsGroup, fsGroup: sc.fsGroup };
    if (/^(docker\.io\/(library\/)?)?nginx:/.test(main.image)) {
      const purgePort = main.ports?.find((p: any) => p.name === 'purge')?.containerPort;
      if (typeof purgePort !== 'number') throw new Error(`${name}: an nginx workload without a purge port`);
      const none: Container = { name: main.name, image: main.image, args: [], env: {}, tmpfs: {}, readOnlyRoot: true };
      return { ...base, init: [], main: none, hostNginx: { purgePort } };
    }
    return { ...base, init: (pod.initContainers ?? []).map(container), main: container(main) };
  });

  const ingresses = objects
    .filter((o) => o.kind === 'Ingress')
    .map((o): IngressServer => {
      const a = o.metadata.annotations ?? {};
      const routes: Route[] = o.spec.rules.flatMap((r: any) =>
        r.http.paths.map((p: any) => {
          if (p.pathType !== 'Prefix') throw new Error(`${o.metadata.name}: pathType ${p.pathType}`);
          return { host: r.host, path: p.path, service: p.backend.service.name };
        }),
      );
      return {
        name: o.metadata.name,
        hosts: o.spec.tls.flatMap((t: any) => t.hosts),
        routes,
        // ingress-nginx's defaults where the annotation is absent: 1m body, 60 s timeouts, buffered requests.
        bodySize: a['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '1m',
        readTimeout: a['nginx.ingress.kubernetes.io/proxy-read-timeout'],
        sendTimeout: a['nginx.ingress.kubernetes.io/proxy-send-timeout'],
        requestBuffering: a['nginx.ingress.kubernetes.io/proxy-request-buffering'] !== 'off',
      };
    });

  const nats = objects.find((o) => o.kind === 'StatefulSet' && o.metadata.name === 'nats');
  const natsEnv: Record<string, string> = {};
  const [natsContainer, ...sidecars] = nats.spec.template.spec.containers;
  for (const e of natsContainer.env ?? []) if (e.value !== undefined) natsEnv[e.name] = String(e.value);
  const mountsOf = (c: any): Record<string, string> =>
    Object.fromEntries((c.volumeMounts ?? []).filter((m: any) => !m.subPath).map((m: any) => [m.mountPath, m.name]));
  const natsSidecars = sidecars.map((c: any) => {
    if (!Array.isArray(c.command) || c.args) throw new Error(`nats/${c.name}: a sidecar without a command, or with args, this runner does not know`);
    return { name: c.name as string, command: c.command as string[], mounts: mountsOf(c) };
  });
  const natsConf = configMaps.get('nats-config')?.['nats.conf'];
  const postgresInitSql = Object.values(configMaps.get('postgres-init') ?? {}).join('\n');
  if (!natsConf) throw new Error('no nats-config ConfigMap');
  return {
    namespace,
    workloads,
    hosts,
    ingresses,
    natsConf,
    natsEnv,
    natsReplicas: nats.spec.replicas,
    natsSidecars,
    natsMounts: mountsOf(natsContainer),
    natsSecretVolumes: Object.fromEntries((nats.spec.template.spec.volumes ?? []).filter((v: any) => v.secret).map((v: any) => [v.name, v.secret.secretName])),
    postgresInitSql,
    secrets,
  };
}

/** One substitution of the rendered nats.conf: the pattern must be there, so a changed manifest is noticed. */
function replaceOnce(text: string, from: string | RegExp, to: string): string {
  const found = typeof from === 'string' ? text.includes(from) : from.test(text);
  if (!found) throw new Error(`the rendered nats.conf no longer holds ${String(from)}: update deploy/production-form/form.ts`);
  return text.replace(from, to);
}

/**
 * A NATS pod's volume as a host folder: `<node dir>/<volume name>` (the `data` volume is the node dir itself, as
 * before). One folder per volume, whichever container mounts it: the server and its sidecars share them as in the pod.
 */
export const natsVolumeDir = (dir: string, volume: string): string => (volume === 'data' ? dir : path.join(dir, volume));

/** A path inside a NATS pod's container (`mounts`: mount path → volume) as the host path of its volume's folder. */
export function natsHostPath(mounts: Record<string, string>, dir: string, podPath: string): string {
  const mount = Object.keys(mounts)
    .filter((m) => podPath === m || podPath.startsWith(`${m}/`))
    .sort((x, y) => y.length - x.length)[0];
  if (mount === undefined) throw new Error(`${podPath} is on no volume of the NATS pod: update deploy/production-form/form.ts`);
  return path.join(natsVolumeDir(dir, mounts[mount] as string), path.relative(mount, podPath));
}

/**
 * A NATS sidecar's command as it runs beside node i: every path under one of its mounts becomes the host folder of
 * that volume (the same folder the server's own mount of the volume is), nothing else changes.
 */
export function natsSidecarCommand(sidecar: Form['natsSidecars'][number], dir: string): string[] {
  const mounts = Object.keys(sidecar.mounts).sort((x, y) => y.length - x.length);
  if (mounts.length === 0) return sidecar.command;
  const pattern = new RegExp(`(${mounts.map((m) => m.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})(?=/|'|"|\\s|$)`, 'g');
  return sidecar.command.map((part) => part.replace(pattern, (m) => natsVolumeDir(dir, sidecar.mounts[m] as string)));
}

/**
 * Node i's nats.conf: the rendered one with its pod-local parts made host-local: listen addresses (the pod's IP),
 * the store and pid file (the host folders of their volumes: the pid file where the auth-reloader sidecar signals),
 * and the routes by address (nats-server on the host does not see the containers' host names).
 */
export function natsNodeConf(form: Form, i: number, dir: string): string {
  const a = INFRA_ADDRESSES.nats[i] as string;
  let c = form.natsConf;
  c = replaceOnce(c, /^listen: 0\.0\.0\.0:4222$/m, `listen: ${a}:4222`);
  c = replaceOnce(c, /^http: 0\.0\.0\.0:8222$/m, `http: ${a}:8222`);
  const pidFile = /^pid_file: (\S+)$/m.exec(c)?.[1];
  if (!pidFile) throw new Error('the rendered nats.conf names no pid_file: update deploy/production-form/form.ts');
  c = replaceOnce(c, `pid_file: ${pidFile}`, `pid_file: ${natsHostPath(form.natsMounts, dir, pidFile)}`);
  c = replaceOnce(c, 'store_dir: /data/jetstream', `store_dir: ${dir}/jetstream`);
  c = replaceOnce(c, /^(\s+)listen: 0\.0\.0\.0:6222$/m, `$1listen: ${a}:6222`);
  c = replaceOnce(c, /nats:\/\/nats-(\d)\.nats:6222/g, 'ROUTE');
  return c.replace(/ROUTE(, )?/g, '').replace('routes: []', `routes: [${INFRA_ADDRESSES.nats.map((x) => `nats://${x}:6222`).join(', ')}]`);
}

export interface NginxOptions {
  dir: string;
  certFile: string;
  keyFile: string;
  httpsPort: number;
  pgPort: number;
  s3Port: number;
  /** A workload's pod, when it is not at the workload's own address (a restarted one: run.ts restart): name → address. */
  pods?: Record<string, string>;
}

/** The Services' port mapping (kube-proxy's part) and the Ingress objects as nginx configuration. */
export function nginxConf(form: Form, o: NginxOptions): string {
  // The Service stays at the workload's address; its endpoint is the pod's.
  const endpoint = (w: Workload) => `${o.pods?.[w.name] ?? w.address}:${w.port}`;
  const upstreamOf = (service: string) => {
    if (service === 'minio') return `127.0.0.1:${o.s3Port}`;
    const w = form.workloads.find((x) => x.name === service);
    if (!w) throw new Error(`an Ingress routes to ${service}, which is no workload here`);
    return endpoint(w);
  };
  const stream = [
    ...form.workloads.map((w) => `  server { listen ${w.address}:80; proxy_pass ${endpoint(w)}; }`),
    `  server { listen ${INFRA_ADDRESSES.minio}:9000; proxy_pass 127.0.0.1:${o.s3Port}; }`,
    `  server { listen ${INFRA_ADDRESSES.postgres}:5432; proxy_pass 127.0.0.1:${o.pgPort}; }`,
  ];
  const servers = form.ingresses.flatMap((ing) => {
    const byHost = new Map<string, Route[]>();
    for (const r of ing.routes) byHost.set(r.host, [...(byHost.get(r.host) ?? []), r]);
    return [...byHost].map(([host, routes]) => {
      const proxy = (r: Route) =>
        [
          `      proxy_pass http://${upstreamOf(r.service)};`,
          ...(ing.readTimeout ? [`      proxy_read_timeout ${ing.readTimeout}s;`] : []),
          ...(ing.sendTimeout ? [`      proxy_send_timeout ${ing.sendTimeout}s;`] : []),
        ].join('\n');
      // pathType Prefix: the path itself and everything below it, element by element.
      const locations = routes.map((r) => `    location = ${r.path} {\n${proxy(r)}\n    }\n    location ${r.path.replace(/\/$/, '')}/ {\n${proxy(r)}\n    }`);
      return [
        `  # Ingress ${ing.name}`,
        '  server {',
        `    listen 127.0.0.1:${o.httpsPort} ssl;`,
        `    server_name ${host};`,
        `    client_max_body_size ${ing.bodySize};`,
        `    proxy_request_buffering ${ing.requestBuffering ? 'on' : 'off'};`,
        ...locations,
        '  }',
      ].join('\n');
    });
  });
  return `# Generated by deploy/production-form/form.ts from the rendered dev overlay: do not edit.
load_module /usr/share/nginx/modules/ngx_stream_module.so;
worker_processes 2;
pid ${o.dir}/nginx.pid;
error_log ${o.dir}/error.log warn;
events { worker_connections 4096; }
# The Services: <service>:80 -> the pod's port, minio:9000 and postgres:5432 -> the servers of this machine.
stream {
${stream.join('\n')}
}
# The Ingress objects, as ingress-nginx serves them: TLS ends here; the client's address, scheme, host and port go on.
http {
  access_log ${o.dir}/access.log;
  # Each upstream nginx opened (the ingress controller's connections), for the NetworkPolicy test.
  log_format upstreams '$upstream_addr';
  access_log ${o.dir}/upstreams.log upstreams;
  client_body_temp_path ${o.dir}/body;
  proxy_temp_path ${o.dir}/proxy;
  fastcgi_temp_path ${o.dir}/fastcgi;
  uwsgi_temp_path ${o.dir}/uwsgi;
  scgi_temp_path ${o.dir}/scgi;
  ssl_certificate ${o.certFile};
  ssl_certificate_key ${o.keyFile};
  ssl_protocols TLSv1.2 TLSv1.3;
  proxy_http_version 1.1;
  proxy_buffering off;
  proxy_connect_timeout 5s;
  proxy_read_timeout 60s;
  proxy_send_timeout 60s;
  proxy_set_header Host $host;
  proxy_set_header X-Real-IP $remote_addr;
  proxy_set_header X-Forwarded-For $remote_addr;
  proxy_set_header X-Forwarded-Proto https;
  proxy_set_header X-Forwarded-Host $host;
  proxy_set_header X-Forwarded-Port ${o.httpsPort};
  proxy_set_header Connection "";
  server { listen 127.0.0.1:${o.httpsPort} ssl default_server; server_name _; return 404; }
${servers.join('\n')}
}
`;
}
