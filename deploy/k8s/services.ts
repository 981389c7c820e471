/**
 * The suite as Kubernetes runs it: one entry per service, from which deploy/k8s/generate.ts writes k8s/base. What
 * differs between services lives here (who calls whom, what each needs, how much memory it was measured to use);
 * what is the same for all lives in the generator.
 */

import type { S3Access } from './object-store';
import { DUE_DELIVERIES_PER_REPLICA, DUE_DELIVERIES_SQL } from '../../services/webhook/src/adapters/autoscaling';

export type ServiceName = 'gateway' | 'upload' | 'link-signing' | 'auth' | 'metadata' | 'search' | 'conversion' | 'transcode' | 'addon' | 'webhook';

export interface ServiceSpec {
  name: ServiceName;
  /** `media` adds ffmpeg, tesseract and the model files (Dockerfile target `media`). */
  image: 'runtime' | 'media';
  /** Reached from outside the namespace through the Ingress (the three public addresses of the contract). */
  public?: { host: 'base' | 'upload' | 'cdn'; paths: string[] };
  /** Services that call this one over HTTP (NetworkPolicy: only these, the ingress controller if public, and
   *  Prometheus for /metrics). */
  callers: ServiceName[];
  /**
   * Owns a PostgreSQL database (DATABASE_URL in its Secret; migrations run in an init container first), with at
   * most `poolMax` connections per process (DB_POOL_MAX). The pools of every replica at the overlays' maximum
   * must fit the server's max_connections: deploy/test/k8s-production.unit.test.ts adds them up.
   */
  database?: { poolMax: number };
  nats?: boolean;
  /** What it does in the object store: its own MinIO user gets exactly this (deploy/k8s/object-store.ts). */
  s3?: S3Access;
  /**
   * Fetches objects from the object store by URLs another service presigned, with no user of its own: the
   * gateway streams downloads itself (ACCEL, libs/http/src/accel.ts) from the URL metadata signs on S3_ENDPOINT.
   * The object store's NetworkPolicy admits it like the services with `s3`.
   */
  fetchesPresigned?: boolean;
  /**
   * Opens connections to addresses on the internet that tenants name (webhook receivers, ingest URLs), each through
   * libs/http's outbound guard: its egress policy admits public addresses on any port, never the private ranges
   * (deploy/k8s/egress.ts).
   */
  internet?: boolean;
  /** Verifies or signs user JWTs (the edges and auth): gets JWT_SECRET. */
  jwt?: boolean;
  /** Measured peak RSS (docs/benchmarks.md) → memory request and limit. */
  memory: { request: string; limit: string };
  cpu: string;
  /** Writable directories on the read-only root filesystem: path → emptyDir size limit. */
  scratch: Record<string, string>;
  /** Extra environment (on top of the shared ConfigMap). */
  env?: Record<string, string>;
  /** Secret keys of its own Secret `dam-<name>` beyond SERVICE_KEY / NATS_NKEY_SEED / DATABASE_URL. */
  secretKeys?: string[];
  /** The drain allowed on SIGTERM (SHUTDOWN_TIMEOUT_MS); the pod's grace period is longer. */
  drainSeconds: number;
  /**
   * Scaling: HPA on CPU (edges), or KEDA on the depth of its JetStream consumer (workers), and also on a count its
   * own database answers (`due`: the query, and the value per replica; KEDA connects with the service's DATABASE_URL).
   */
  scale?: { cpu: number } | { consumer: string; stream: string; lag: number; max: number; due?: { query: string; perReplica: number } };
  /** Seconds its readiness may take at start (models loading). */
  startupSeconds?: number;
  /**
   * Browsers call it from the console ({base}): CORS_ALLOWED_ORIGINS is the console's origin only, never `*`. The
   * overlays' `replacements` copy the host of dam-config's PUBLIC_BASE_URL into it, so a host change follows.
   */
  consoleCors?: boolean;
}

export const SERVICES: readonly ServiceSpec[] = [
  {
    name: 'gateway',
    jwt: true,
    image: 'runtime',
    public: { host: 'base', paths: ['/api', '/console'] },
    callers: [],
    // Idempotency-Key responses (a claim, then a kept answer: two short statements per keyed POST). One connection
    // per replica: the edge scales out to many replicas, each of which counts against max_connections.
    database: { poolMax: 1 },
    nats: true,
    // Download Asset, /content/:key/* and Get Conversion: metadata checks the caller and presigns, the gateway streams.
    fetchesPresigned: true,
    memory: { request: '320Mi', limit: '640Mi' }, // peak 270-311 MiB (delivery bench)
    cpu: '250m',
    scratch: { '/tmp': '64Mi' },
    drainSeconds: 20,
    scale: { cpu: 70 },
  },
  {
    name: 'upload',
    jwt: true,
    image: 'media', // ffprobe reads the metadata of uploaded videos
    public: { host: 'upload', paths: ['/api'] },
    callers: [],
    database: { poolMax: 1 }, // Idempotency-Key responses, as the gateway's
    nats: true,
    s3: { read: ['originals/', 'tus/'], write: ['originals/', 'tus/'], remove: ['originals/', 'tus/'], listUploads: true },
    memory: { request: '256Mi', limit: '512Mi' }, // peak 206-223 MiB, flat with the file size
    cpu: '250m',
    // The tus store's parts on their way to S3 (60 × TUS_PART_SIZE 8 MiB = 480 MiB: TUS_PARTS_IN_FLIGHT in
    // services/upload/src/adapters/tus-store.ts), and the trailing pieces (< 5 MiB) resumed PATCHes fetch back.
    scratch: { '/tmp': '1Gi' },
    drainSeconds: 60, // uploads in flight finish
    scale: { cpu: 70 },
    consoleCors: true,
    internet: true, // Ingest from an https URL (CONTRACT §11)
  },
  {
    name: 'link-signing',
    image: 'runtime',
    public: { host: 'cdn', paths: ['/api/v1/files'] },
    callers: ['gateway'],
    nats: true,
    s3: { read: ['originals/', 'conversions/'] }, // the internet-facing edge only reads
    memory: { request: '256Mi', limit: '512Mi' }, // peak 207-241 MiB
    cpu: '250m',
    scratch: { '/tmp': '64Mi', '/var/cache/dam': '3Gi' },
    // A folder inside the volume: link-signing empties the cache at start by removing the folder (a mount point cannot be).
    env: {
      CDN_CACHE_DIR: '/var/cache/dam/cdn',
      CDN_CACHE_MAX_BYTES: '2147483648',
      // The cache tier's purge endpoint (every replica of the headless Service): deploy/k8s/cdn-cache.ts.
      CDN_TIER_PURGE_URLS: 'http://cdn-cache-purge:8081/purge',
    },
    secretKeys: ['LINK_SIGNING_KEYS'],
    drainSeconds: 20,
  },
  {
    name: 'auth',
    jwt: true,
    image: 'runtime',
    callers: ['gateway', 'upload', 'link-signing', 'metadata', 'conversion', 'transcode', 'webhook'],
    database: { poolMax: 4 }, // logins, token and key checks: short queries
    nats: true,
    memory: { request: '256Mi', limit: '512Mi' }, // idle 164 MiB (2026-11-23)
    cpu: '100m',
    scratch: { '/tmp': '64Mi' },
    secretKeys: ['ADMIN_EMAIL', 'ADMIN_PASSWORD'],
    drainSeconds: 10,
  },
  {
    name: 'metadata',
    image: 'runtime',
    callers: ['gateway', 'upload', 'auth', 'link-signing', 'transcode'],
    database: { poolMax: 7 }, // the busiest: every download's check, job reports (4 at once), pollers; the outbox relay and the asset-change notices each hold one
    nats: true,
    // Add Conversion writes conversions; housekeeping removes both; Set Public Access writes the bucket policy;
    // bulk deletes keep their records under exports/ (served through GET /api/v1/jobs/{job_id}/export).
    s3: { read: ['originals/', 'conversions/', 'exports/'], write: ['conversions/', 'exports/', 'public/'], remove: ['originals/', 'conversions/', 'public/'], bucketPolicy: true },
    memory: { request: '384Mi', limit: '768Mi' }, // peak 324-364 MiB
    cpu: '250m',
    scratch: { '/tmp': '64Mi' },
    drainSeconds: 10,
  },
  {
    name: 'search',
    image: 'runtime',
    callers: ['gateway'],
    database: { poolMax: 4 }, // one query per search, result sets kept in PostgreSQL
    nats: true,
    memory: { request: '256Mi', limit: '512Mi' }, // idle 152 MiB; its queries run in PostgreSQL (2026-11-23)
    cpu: '250m',
    scratch: { '/tmp': '64Mi' },
    drainSeconds: 10,
  },
  {
    name: 'conversion',
    image: 'runtime', // sharp (libvips) ships in node_modules
    callers: ['metadata'],
    nats: true,
    // Transforms may start from a conversion; old variants of its transform cache (`_t/`) are pruned.
    s3: { read: ['originals/', 'conversions/'], write: ['conversions/'], remove: ['conversions/*/_t/'] },
    memory: { request: '512Mi', limit: '1Gi' }, // 338 MiB on a 100-megapixel JPEG
    cpu: '500m',
    scratch: { '/tmp': '4Gi' },
    env: { TMPDIR: '/tmp' },
    drainSeconds: 60,
    scale: { consumer: 'conversion-jobs', stream: 'DAM_INTERNAL', lag: 10, max: 10 },
  },
  {
    name: 'transcode',
    image: 'media',
    callers: [],
    nats: true,
    s3: { read: ['originals/', 'conversions/'], write: ['conversions/'] }, // its _transcode/ markers are under conversions/
    memory: { request: '1Gi', limit: '2Gi' }, // 680-707 MiB with ffmpeg on 1080p
    cpu: '1000m',
    scratch: { '/tmp': '20Gi' },
    env: { WORK_DIR: '/tmp', TMPDIR: '/tmp' },
    drainSeconds: 120, // a transcode in progress is handed out again if it does not end in time
    scale: { consumer: 'transcode-jobs', stream: 'DAM_INTERNAL', lag: 2, max: 8 },
  },
  {
    name: 'addon',
    image: 'media',
    callers: [],
    database: { poolMax: 2 }, // CONCURRENCY 2 jobs, each one short transaction at a time
    nats: true,
    s3: { read: ['originals/'], write: ['conversions/'] },
    memory: { request: '1536Mi', limit: '2Gi' }, // 1.09 GiB with every model, peak 1.21 GiB, plus up to 64 MiB of originals (ORIGINALS_CACHE_BYTES)
    cpu: '1000m',
    scratch: { '/tmp': '1Gi' },
    env: { TMPDIR: '/tmp' },
    drainSeconds: 60,
    scale: { consumer: 'addon-jobs', stream: 'DAM_INTERNAL', lag: 5, max: 6 },
    startupSeconds: 180,
  },
  {
    name: 'webhook',
    image: 'runtime',
    callers: ['gateway'],
    database: { poolMax: 2 }, // leases deliveries in short transactions; none is held during an HTTP delivery
    nats: true,
    internet: true, // deliveries to the customers' receivers
    memory: { request: '256Mi', limit: '512Mi' }, // peak 184 MiB idle (2026-11-23)
    cpu: '100m',
    scratch: { '/tmp': '64Mi' },
    drainSeconds: 30,
    // Deliveries wait in its database, not in the stream (slow receivers, retries, reissues): scaled on both.
    scale: { consumer: 'webhook-deliveries', stream: 'ASSET_EVENTS', lag: 50, max: 6, due: { query: DUE_DELIVERIES_SQL, perReplica: DUE_DELIVERIES_PER_REPLICA } },
  },
];

/** Every Service listens on port 80 and forwards to the container's 8080. */
export const CONTAINER_PORT = 8080;

/** `http://auth` for auth: how services find each other inside the namespace. */
export const urlOf = (name: ServiceName): string => `http://${name}`;
export const envName = (name: string): string => name.replace(/-/g, '_').toUpperCase();

/**
 * `TRUST_PROXY` of a service (libs/http/src/trust-proxy.ts): which hops may tell it the client's address.
 * - Behind the Ingress (gateway, upload, the {cdn} edge): `1`, exactly the ingress-nginx hop. ingress-nginx sets
 *   `X-Forwarded-For` to the address it saw (it does not pass on a client's own header unless
 *   `use-forwarded-headers` is turned on), and the service takes the last entry, so a client cannot choose its
 *   rate-limit bucket. A hop count rather than the controller's CIDR: pod CIDRs differ per cluster and change with
 *   node pools, and the NetworkPolicy already admits only the ingress namespace (and for the edge the gateway,
 *   which overwrites the header with the address it determined) as the one hop in front. If a load balancer in
 *   front of ingress-nginx hides the clients, fix that at the controller (PROXY protocol, or
 *   `externalTrafficPolicy: Local`), never by trusting more hops here.
 * - Everything else is reached only by other pods: `none` (the peer is the caller; explicit, as production
 *   requires a value).
 */
/**
 * `{cdn}` is served by the nginx cache tier (deploy/k8s/cdn-cache.ts), which alone reaches link-signing's edge: the
 * Ingress and the Gateway API route that host to it.
 */
export const CDN_FRONT = 'cdn-cache';
/** What the public routes of a service go to: the service, or for `{cdn}` the cache tier in front of it. */
export const publicBackendOf = (s: Pick<ServiceSpec, 'name' | 'public'>): string => (s.public?.host === 'cdn' ? CDN_FRONT : s.name);
/** Proxies in front: the ingress controller, and for `{cdn}` the cache tier too (X-Forwarded-For from both). */
export const trustProxyOf = (s: Pick<ServiceSpec, 'public'>): string => (s.public ? (s.public.host === 'cdn' ? '2' : '1') : 'none');

/** Calls another service over HTTP (it is among that service's callers): signs its requests with SERVICE_KEY. */
export const callsOthers = (s: Pick<ServiceSpec, 'name'>): boolean => SERVICES.some((x) => x.callers.includes(s.name));
/** Has internal routes (some service calls it): verifies callers with SERVICE_TRUSTED_KEYS; its URL is in dam-config. */
export const isCalled = (s: Pick<ServiceSpec, 'callers'>): boolean => s.callers.length > 0;
