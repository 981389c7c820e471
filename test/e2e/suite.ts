import { randomBytes } from 'node:crypto';
import type { components } from '@dam/client';
import { NATS_IDENTITIES } from '@dam/events';
import {
  createBucket,
  createDatabase,
  freePort,
  s3Env,
  serviceIdentities,
  startNats,
  startNatsCluster,
  startFaultProxy,
  startPostgresCluster,
  startServiceProcess,
  testPgUrl,
  type FaultProxy,
  type PostgresCluster,
  type ServiceIdentities,
  type ServiceProcess,
  type TestNats,
  type TestNatsCluster,
} from '@dam/testing';
import { apiClient } from './client';
import { suiteRecording } from './flow-recording';

export const ADMIN = { email: 'admin@example.com', password: 'admin-password' };

export interface Suite {
  base: string;
  upload: string;
  /** `{cdn}`: the edge of signed links (link-signing). */
  cdn: string;
  /** The NATS server, or every node of the cluster comma-separated (as the services get it in NATS_URL). */
  natsUrl: string;
  /** The JetStream cluster the suite runs on, with `natsCluster` (its nodes can be killed and restarted). */
  natsCluster?: TestNatsCluster;
  /** The single nats-server the suite runs on when it runs on no cluster (it can be paused and resumed). */
  nats?: TestNats;
  /** The suite's own PostgreSQL, with `ownPostgres` (it can be paused and resumed). */
  postgres?: PostgresCluster;
  /** The fault proxies the services reach PostgreSQL and S3 through, with `proxies`. */
  proxies: { postgres?: FaultProxy; s3?: FaultProxy };
  /** The asset bucket every service uses. */
  bucket: string;
  /** The nkey seed of `subscriber-example`, the read-only user of one outside system (its one consumer: that name). */
  subscriberSeed: string;
  /** The secret user JWTs are signed with (JWT_SECRET), for tokens a test forges. */
  jwtSecret: string;
  /** The services' public keys every verifier trusts (SERVICE_TRUSTED_KEYS). */
  trustedKeys: string;
  /** A service token header signed as `service` (test code standing in for the gateway, upload, ...). */
  serviceHeaders: ServiceIdentities['headers'];
  /** The operators' identity: reads DAM_INTERNAL too (usage records). */
  adminSeed: string;
  services: Record<string, ServiceProcess>;
  /** The directory the services record the connections they open in, with `recordFlows` or DAM_RECORD_FLOWS (test/e2e/flow-recording.ts). */
  flows?: string;
  /** The DATABASE_URL a service was given (its own database; the gateway's and upload's hold their Idempotency-Key table). */
  databaseOf(name: string): string;
  /** Starts a stopped or killed service again with the env it had, and `env` over it (kept for later restarts). */
  restart(name: string, env?: Record<string, string>): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

/** Every service of the suite. */
export const ALL_SERVICES = ['gateway', 'upload', 'metadata', 'conversion', 'transcode', 'addon', 'search', 'webhook', 'link-signing', 'auth'] as const;
export type SuiteServiceName = (typeof ALL_SERVICES)[number];
/**
 * What a file gets unless it asks for more: the image path and every public address. Video transcodes and the
 * analysis addons are left out, since their workers cost CPU at start (the addon loads its models for seconds) that
 * every other test on the machine would pay for; a file that uploads videos or runs addons adds them.
 */
export const CORE_SERVICES: readonly SuiteServiceName[] = ['gateway', 'upload', 'metadata', 'conversion', 'search', 'webhook', 'link-signing', 'auth'];
/** The services metadata's and the gateway's wiring needs in any suite. */
const ALWAYS: readonly SuiteServiceName[] = ['metadata', 'auth', 'gateway'];

export interface SuiteOptions {
  /**
   * The services to start (metadata, auth and the gateway always are): CORE_SERVICES by default. The gateway and
   * the others are still given the addresses of those not started, which then answer as a service that is down.
   */
  services?: readonly SuiteServiceName[];
  /**
   * Runs on a JetStream cluster of this many nats-servers instead of one server: every service gets all of
   * them in NATS_URL, and NATS_STREAM_REPLICAS (the streams' and KV buckets' replicas, default: as many as
   * the nodes, at most 3).
   */
  natsCluster?: { nodes: number; replicas?: number };
  /** A PostgreSQL server of the suite's own instead of the shared one (a test may stop and restart it). */
  ownPostgres?: boolean;
  /** The services reach PostgreSQL and/or S3 through a fault proxy each (libs/testing startFaultProxy). */
  proxies?: { postgres?: boolean; s3?: boolean };
  /** Each service records every connection it opens, in a directory of this suite's own under this one (default: DAM_RECORD_FLOWS). */
  recordFlows?: string;
}

/** Env per service name, over what startSuite gives it. */
export type Overrides = Record<string, Record<string, string>>;

/**
 * The services of the first asset path as real processes, on fresh infrastructure: a NATS server (or cluster)
 * of its own, fresh databases and a fresh bucket on the shared PostgreSQL and S3 servers of this jest run.
 */
export async function startSuite(overrides: Overrides = {}, options: SuiteOptions = {}): Promise<Suite> {
  const cluster = options.natsCluster ? await startNatsCluster({ nodes: options.natsCluster.nodes }) : undefined;
  const nats = cluster ?? (await startNats());
  const natsCommon: Record<string, string> = options.natsCluster
    ? { NATS_STREAM_REPLICAS: String(options.natsCluster.replicas ?? Math.min(3, options.natsCluster.nodes)) }
    : {};
  const bucket = await createBucket('e2e');
  const recording = suiteRecording(options.recordFlows ?? process.env.DAM_RECORD_FLOWS);
  const postgres = options.ownPostgres ? await startPostgresCluster() : undefined;
  const pgAdmin = postgres?.url ?? testPgUrl();
  const pgTarget = new URL(pgAdmin);
  const s3 = s3Env(bucket);
  const s3Target = new URL(s3.S3_ENDPOINT);
  const proxies: Suite['proxies'] = {
    ...(options.proxies?.postgres ? { postgres: await startFaultProxy({ host: pgTarget.hostname, port: Number(pgTarget.port) }) } : {}),
    ...(options.proxies?.s3 ? { s3: await startFaultProxy({ host: s3Target.hostname, port: Number(s3Target.port) }) } : {}),
  };
  const via = (url: string, proxy: FaultProxy | undefined): string => {
    if (!proxy) return url;
    const u = new URL(url);
    u.hostname = proxy.host;
    u.port = String(proxy.port);
    return u.toString().replace(/\/$/, '');
  };
  /** A fresh database of the suite's PostgreSQL, as the services reach it. */
  const database = async (prefix: string) => via(await createDatabase(prefix, pgAdmin), proxies.postgres);
  const common: Record<string, string> = {
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    JWT_SECRET: randomBytes(24).toString('hex'),
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    ...s3,
    S3_ENDPOINT: via(s3.S3_ENDPOINT, proxies.s3),
  };
  const stopInfrastructure = async () => {
    await Promise.allSettled([nats.stop(), ...Object.values(proxies).map((p) => p.stop()), ...(postgres ? [postgres.stop()] : [])]);
  };
  const services: Record<string, ServiceProcess> = {};
  const envs: Record<string, Record<string, string>> = {};
  // Each service its own key pair; every verifier trusts the suite's public keys, as deploy/local sets them up.
  const identities = serviceIdentities();
  const ports: Record<string, number> = {};
  const wanted = new Set<string>([...ALWAYS, ...(options.services ?? CORE_SERVICES)]);
  /** Starts `name` when the file wants it (its env, databases included, is made only then). */
  const startWanted = async (name: SuiteServiceName, env: () => Promise<Record<string, string>>, port?: number) =>
    wanted.has(name) ? start(name, await env(), port) : undefined;
  const start = async (name: string, env: Record<string, string>, port?: number) => {
    const natsIdentity = NATS_IDENTITIES.find((n) => n === name);
    const natsAccess = natsIdentity ? { ...nats.env(natsIdentity), ...natsCommon } : {};
    envs[name] = { ...common, ...natsAccess, ...identities.env(name), ...recording?.env(name), ...env, ...overrides[name] };
    services[name] = await startServiceProcess(name, envs[name], port === undefined ? {} : { port });
    // A restart comes back on the same address: the other services and the tests know this one.
    ports[name] = services[name].port;
    return services[name];
  };

  try {
    // metadata first: auth asks it about watermark assets in settings changes; metadata asks auth for settings
    // (bulk delete limits) only when a request needs them, so auth's port is fixed up front.
    const authPort = await freePort();
    const conversionPort = await freePort();
    const metadata = await start('metadata', {
      DATABASE_URL: await database('e2e_metadata'),
      AUTH_URL: `http://127.0.0.1:${authPort}`,
      CONVERSION_URL: `http://127.0.0.1:${conversionPort}`,
    });
    const auth = await start('auth', { DATABASE_URL: await database('e2e_auth'), METADATA_URL: metadata.url, WEBHOOK_ALLOW_HOSTS: '127.0.0.1' }, authPort);
    const cdnPort = await freePort();
    const searchPort = await freePort();
    const webhookPort = await freePort();
    const uploadPort = await freePort();
    const [gateway] = await Promise.all([
      start('gateway', {
        DATABASE_URL: await database('e2e_gateway'),
        AUTH_URL: auth.url,
        METADATA_URL: metadata.url,
        LINK_SIGNING_URL: `http://127.0.0.1:${cdnPort}`,
        SEARCH_URL: `http://127.0.0.1:${searchPort}`,
        WEBHOOK_URL: `http://127.0.0.1:${webhookPort}`,
        // The web console's config.json and CSP name the suite's own {upload} and {cdn}.
        PUBLIC_UPLOAD_URL: `http://127.0.0.1:${uploadPort}`,
        PUBLIC_CDN_URL: `http://127.0.0.1:${cdnPort}`,
      }),
      startWanted('upload', async () => ({ DATABASE_URL: await database('e2e_upload'), AUTH_URL: auth.url, METADATA_URL: metadata.url }), uploadPort),
      startWanted('conversion', async () => ({ AUTH_URL: auth.url }), conversionPort),
      startWanted('addon', async () => ({ DATABASE_URL: await database('e2e_addon') })),
      startWanted('transcode', async () => ({ AUTH_URL: auth.url, METADATA_URL: metadata.url })),
      startWanted(
        'link-signing',
        async () => ({
          AUTH_URL: auth.url,
          METADATA_URL: metadata.url,
          PUBLIC_CDN_URL: `http://127.0.0.1:${cdnPort}`,
          LINK_SIGNING_KEYS: randomBytes(32).toString('hex'),
          USAGE_FLUSH_MS: '500',
        }),
        cdnPort,
      ),
      startWanted('search', async () => ({ DATABASE_URL: await database('e2e_search'), SEARCH_SUNSET: 'Wed, 01 Dec 2027 00:00:00 GMT' }), searchPort),
      startWanted(
        'webhook',
        async () => ({
          DATABASE_URL: await database('e2e_webhook'),
          AUTH_URL: auth.url,
          WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
          WEBHOOK_RETRY_DELAYS_MS: '0,200,200,200,200,200,200,200',
          DISPATCH_INTERVAL_MS: '100',
        }),
        webhookPort,
      ),
    ]);
    recording?.name({
      services: { ...ports, auth: authPort, conversion: conversionPort, 'link-signing': cdnPort, search: searchPort, webhook: webhookPort, upload: uploadPort },
      nats: nats.url,
      postgres: pgAdmin,
      s3: s3.S3_ENDPOINT,
      proxies,
    });
    return {
      base: gateway.url,
      upload: `http://127.0.0.1:${uploadPort}`,
      cdn: `http://127.0.0.1:${cdnPort}`,
      natsUrl: nats.url,
      ...(cluster ? { natsCluster: cluster } : {}),
      ...(cluster ? {} : { nats: nats as TestNats }),
      ...(postgres ? { postgres } : {}),
      proxies,
      bucket,
      subscriberSeed: nats.seed('subscriber-example'),
      jwtSecret: common.JWT_SECRET as string,
      trustedKeys: identities.env('gateway').SERVICE_TRUSTED_KEYS,
      serviceHeaders: identities.headers,
      adminSeed: nats.seed('admin'),
      services,
      ...(recording ? { flows: recording.dir } : {}),
      databaseOf(name) {
        const url = envs[name]?.DATABASE_URL;
        if (!url) throw new Error(`${name} has no database in this suite`);
        return url;
      },
      async restart(name, changed = {}) {
        const had = envs[name];
        if (!had) throw new Error(`unknown service ${name}`);
        const env = { ...had, ...changed };
        envs[name] = env;
        const port = ports[name];
        services[name] = await startServiceProcess(name, env, port === undefined ? {} : { port });
        return services[name];
      },
      async stop() {
        await Promise.allSettled(Object.values(services).map((s) => s.stop()));
        await stopInfrastructure();
      },
    };
  } catch (err) {
    await Promise.allSettled(Object.values(services).map((s) => s.stop()));
    await stopInfrastructure();
    throw err;
  }
}

/** What a login answers (libs/client, from docs/openapi.yaml): the JWT, the uploadkey, the user's id, … */
export type LoginResult = components['schemas']['LoginResult'];

export async function loginResult(base: string, email: string, password: string): Promise<LoginResult> {
  const res = await fetch(`${base}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as LoginResult;
}

export async function login(base: string, email: string, password: string): Promise<string> {
  return (await loginResult(base, email, password)).jwt;
}

/** A test file's suite, from useSuite: each value exists once the helper's beforeAll ran (in tests and later hooks). */
export interface SuiteInUse {
  readonly suite: Suite;
  /** The ADMIN's login (its uploadkey, user_id, …). */
  readonly admin: LoginResult;
  /** The ADMIN's JWT. */
  readonly jwt: string;
  /** Calls through the public addresses, as the ADMIN by default. */
  readonly api: ReturnType<typeof apiClient>;
  /** Runs `fn` in the helper's afterAll, before the suite stops (in the order given); a file's own afterAll runs after the stop. */
  beforeStop(fn: () => unknown): void;
}

/**
 * Starts the suite before the file's tests (startSuite with these arguments) and logs in as the ADMIN, stops it after.
 * Setup of the file's own goes in a beforeAll after this call: jest runs the hooks in the order they are declared.
 * `overrides` as a function is called when the suite starts, for values a beforeAll declared before this call made.
 */
export function useSuite(overrides: Overrides | (() => Overrides) = {}, options: SuiteOptions = {}): SuiteInUse {
  let suite: Suite | undefined;
  let admin: LoginResult | undefined;
  const cleanups: Array<() => unknown> = [];
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useSuite: the suite has not started (its values exist in tests and in hooks after useSuite)');
    return value;
  };
  beforeAll(async () => {
    suite = await startSuite(typeof overrides === 'function' ? overrides() : overrides, options);
    admin = await loginResult(suite.base, ADMIN.email, ADMIN.password);
  });
  afterAll(async () => {
    try {
      for (const fn of cleanups) await fn();
    } finally {
      await suite?.stop();
    }
  });
  const use: SuiteInUse = {
    get suite() {
      return started(suite);
    },
    get admin() {
      return started(admin);
    },
    get jwt() {
      return started(admin).jwt;
    },
    api: apiClient(
      () => use.suite,
      () => use.jwt,
    ),
    beforeStop(fn) {
      cleanups.push(fn);
    },
  };
  return use;
}
