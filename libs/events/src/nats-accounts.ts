import { nkeys } from '@nats-io/nats-core';
import { SETTINGS_NOTICES_SUBJECTS } from './settings-notices';
import { ASSET_EVENTS, ASSET_EVENTS_SUBJECTS, ASSET_PURGES, ASSET_PURGES_SUBJECTS, COLLECTIONS, COLLECTIONS_SUBJECTS, DAM_INTERNAL, DATA_SCHEMAS, DATA_SCHEMAS_SUBJECTS, SUBJECT_ADDON_STATUS, SUBJECT_CDN_EVICT, SUBJECT_USAGE_CDN_BYTES, SUBJECT_USAGE_PREFIX, jobReportSubject, usageSubject } from './subjects';

/**
 * NATS identities of the suite (ARCHITECTURE rule 9): one nkey user per service with publish/subscribe
 * permissions per subject, a read-only `subscriber` for outside systems, and `admin` for operators and tests.
 * The server holds only public nkeys; no anonymous user exists, so a connection without a seed is refused.
 */
export const NATS_IDENTITIES = ['admin', 'gateway', 'auth', 'metadata', 'upload', 'conversion', 'transcode', 'link-signing', 'addon', 'webhook', 'search', 'subscriber'] as const;
export type NatsIdentity = (typeof NATS_IDENTITIES)[number];

export interface SubjectPermissions {
  publish: string[];
  /** Refused even where `publish` allows it (deny wins): other identities' consumers on a stream it may name consumers in. */
  publishDeny?: string[];
  subscribe: string[];
  /**
   * May answer the requests it receives (one reply each, to the request's reply subject, within two minutes) without
   * a right to publish into the asker's inbox prefix as such.
   */
  allowResponses?: boolean;
}

/** Replies to this identity's requests (JetStream API answers, pulled messages) arrive under this prefix only. */
export const inboxPrefixOf = (identity: string): string => `_INBOX_${identity}`;

const API = '$JS.API';
/** The account check every JetStream client makes first. */
const JS_INFO = `${API}.INFO`;

/**
 * The durable consumers of each identity, every one named `<identity>-...` (F4 of the security review): an identity may
 * act on its own durables only, and those that may name consumers at run time are refused every other one's.
 * A service's consumer constant must stay equal to its entry here.
 */
export const NATS_DURABLES: { readonly [I in NatsIdentity]?: ReadonlyArray<{ stream: string; name: string }> } = {
  auth: [{ stream: DAM_INTERNAL, name: 'auth-usage' }],
  metadata: [{ stream: DAM_INTERNAL, name: 'metadata-job-reports' }],
  upload: [{ stream: DAM_INTERNAL, name: 'upload-jobs' }],
  conversion: [{ stream: DAM_INTERNAL, name: 'conversion-jobs' }],
  transcode: [{ stream: DAM_INTERNAL, name: 'transcode-jobs' }],
  'link-signing': [{ stream: DAM_INTERNAL, name: 'link-signing-cdn-jobs' }],
  addon: [{ stream: DAM_INTERNAL, name: 'addon-jobs' }],
  webhook: [
    { stream: ASSET_EVENTS, name: 'webhook-deliveries' },
    { stream: DAM_INTERNAL, name: 'webhook-jobs' },
  ],
  search: [
    { stream: ASSET_EVENTS, name: 'search-index' },
    { stream: DATA_SCHEMAS, name: 'search-schemas' },
    { stream: COLLECTIONS, name: 'search-collections' },
    { stream: ASSET_PURGES, name: 'search-purges' },
  ],
};

/** Every request that acts on consumer `name` of `stream`: create or update, inspect, delete, fetch, ack. */
const consumerSubjects = (stream: string, name: string): string[] => [
  `${API}.CONSUMER.CREATE.${stream}.${name}`,
  `${API}.CONSUMER.CREATE.${stream}.${name}.>`,
  `${API}.CONSUMER.DURABLE.CREATE.${stream}.${name}`,
  `${API}.CONSUMER.INFO.${stream}.${name}`,
  `${API}.CONSUMER.DELETE.${stream}.${name}`,
  `${API}.CONSUMER.MSG.NEXT.${stream}.${name}`,
  `$JS.ACK.${stream}.${name}.>`,
];

/** Pull-consume one durable of one stream: create/inspect it, fetch, ack (and nak, term, in-progress). */
function durableConsumer(stream: string, durable: string): string[] {
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.CONSUMER.INFO.${stream}.${durable}`,
    `${API}.CONSUMER.CREATE.${stream}.${durable}`,
    `${API}.CONSUMER.CREATE.${stream}.${durable}.>`,
    `${API}.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.${durable}`,
    `$JS.ACK.${stream}.${durable}.>`,
  ];
}

/** A KV bucket of one's own: its backing stream, puts and deletes, reads, and key listings (ordered consumers). */
function kvBucket(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.STREAM.CREATE.${stream}`,
    `${API}.STREAM.UPDATE.${stream}`,
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
    `${API}.CONSUMER.CREATE.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.DELETE.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.>`,
    // Key listings and watches are push consumers: without answering their flow control, a listing longer than
    // the server's window stalls for good.
    `$JS.FC.${stream}.>`,
    `$KV.${bucket}.>`,
  ];
}

/**
 * The used service-token ids shared by the replicas of each service that verifies service tokens (security review
 * I6): a token is single-use across replicas, not only per process (see service-token-bucket.ts).
 */
const SERVICE_TOKEN_IDS = kvBucket('SERVICE_TOKENS');

/**
 * Ordered (ephemeral, unacknowledged) consumers of one stream with one of `filters`: each replica follows it from now
 * on, or a replay reads it, under a name only known at run time (the client renames it at each reset). NATS matches
 * permissions by whole subject tokens, so a name prefix cannot be granted: any name is, and every other identity's
 * durable on the stream is denied (runTimeNameDenials). Not the ephemeral-create subject `CONSUMER.CREATE.<stream>`
 * (no name token): nats-server 2.9 updates a durable named in its body there, whoever owns it.
 */
function orderedConsumer(stream: string, filters: readonly string[]): string[] {
  return [
    `${API}.STREAM.INFO.${stream}`,
    ...filters.map((filter) => `${API}.CONSUMER.CREATE.${stream}.*.${filter}`),
    `${API}.CONSUMER.INFO.${stream}.*`,
    `${API}.CONSUMER.DELETE.${stream}.*`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.*`,
  ];
}

/** The streams on which each identity names consumers at run time (ordered consumers, an outside system's own). */
const RUN_TIME_NAMES: { readonly [I in NatsIdentity]?: readonly string[] } = {
  'link-signing': [ASSET_EVENTS, DAM_INTERNAL],
  search: [ASSET_EVENTS, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES],
  subscriber: [ASSET_EVENTS],
};

/** Every request on another identity's durables of the streams where `identity` names consumers at run time. */
function runTimeNameDenials(identity: NatsIdentity): string[] {
  const streams = RUN_TIME_NAMES[identity] ?? [];
  return Object.entries(NATS_DURABLES)
    .filter(([owner]) => owner !== identity)
    .flatMap(([, durables]) => (durables ?? []).filter((d) => streams.includes(d.stream)).flatMap((d) => consumerSubjects(d.stream, d.name)));
}

/** Creating and updating the streams: metadata's alone (it owns ASSET_EVENTS, the schemas and the outbox). */
const STREAM_ADMIN = [ASSET_EVENTS, DAM_INTERNAL, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES].flatMap((s) => [`${API}.STREAM.INFO.${s}`, `${API}.STREAM.CREATE.${s}`, `${API}.STREAM.UPDATE.${s}`]);

const PERMISSIONS: Record<Exclude<NatsIdentity, 'admin'>, SubjectPermissions> = {
  // The API requests it counts (usage statistics), and the kept responses of Idempotency-Key (CONTRACT §13).
  gateway: { publish: [JS_INFO, usageSubject('api_requests'), ...kvBucket('IDEMPOTENCY')], subscribe: [] },
  // The owner of usage statistics: every usage record of every service.
  auth: {
    publish: [
      JS_INFO,
      `${API}.STREAM.INFO.${DAM_INTERNAL}`,
      `${API}.CONSUMER.INFO.${DAM_INTERNAL}.auth-usage`,
      `${API}.CONSUMER.CREATE.${DAM_INTERNAL}.auth-usage`,
      `${API}.CONSUMER.CREATE.${DAM_INTERNAL}.auth-usage.${SUBJECT_USAGE_PREFIX}.>`,
      `${API}.CONSUMER.DURABLE.CREATE.${DAM_INTERNAL}.auth-usage`,
      `${API}.CONSUMER.MSG.NEXT.${DAM_INTERNAL}.auth-usage`,
      `$JS.ACK.${DAM_INTERNAL}.auth-usage.>`,
      // Its notices of group settings changes, to every service that keeps settings.
      SETTINGS_NOTICES_SUBJECTS,
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [],
  },
  metadata: {
    // Its outbox relay publishes asset events, schemas, collections, purges and job commands; it reads the workers' job
    // reports, and asks the addon service whether an addon's model loaded.
    publish: [
      JS_INFO,
      ...STREAM_ADMIN,
      'assets.events.>',
      DATA_SCHEMAS_SUBJECTS,
      COLLECTIONS_SUBJECTS,
      ASSET_PURGES_SUBJECTS,
      'dam.internal.jobs.run.>',
      usageSubject('storage_bytes'),
      SUBJECT_ADDON_STATUS,
      ...durableConsumer(DAM_INTERNAL, 'metadata-job-reports'),
      // Replaced once when its filter changed (from the single report subject to one per worker kind).
      `${API}.CONSUMER.DELETE.${DAM_INTERNAL}.metadata-job-reports`,
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  upload: {
    // Its pending-upload journal, the locks of resumable uploads, and ingest jobs: their commands in, their reports out.
    // Finished journal entries are purged key by key (no delete marker left behind).
    publish: [
      JS_INFO,
      ...kvBucket('UPLOAD_PENDING'),
      `${API}.STREAM.PURGE.KV_UPLOAD_PENDING`,
      ...kvBucket('TUS_LOCKS'),
      ...kvBucket('IDEMPOTENCY'),
      jobReportSubject('upload'),
      ...durableConsumer(DAM_INTERNAL, 'upload-jobs'),
    ],
    subscribe: [],
  },
  conversion: {
    // Takes its job commands from DAM_INTERNAL and reports on its own report subject; nothing on ASSET_EVENTS.
    publish: [JS_INFO, jobReportSubject('conversion'), ...durableConsumer(DAM_INTERNAL, 'conversion-jobs'), ...SERVICE_TOKEN_IDS],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  transcode: {
    // As conversion: its job commands from DAM_INTERNAL, its reports on its own report subject.
    publish: [JS_INFO, jobReportSubject('transcode'), usageSubject('transcode_seconds'), ...durableConsumer(DAM_INTERNAL, 'transcode-jobs')],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  'link-signing': {
    // Follows ASSET_EVENTS to drop cached bytes of replaced and deleted assets (every replica its own cache);
    // publishes the bytes it served for usage (CONTRACT §9).
    // Takes CDN prefetch and purge jobs like any worker; a purge is published to every replica, which follows only
    // that one subject of DAM_INTERNAL (the filter is part of the consumer-create subject).
    publish: [
      JS_INFO,
      ...orderedConsumer(ASSET_EVENTS, [ASSET_EVENTS_SUBJECTS]),
      ...orderedConsumer(DAM_INTERNAL, [SUBJECT_CDN_EVICT]),
      SUBJECT_USAGE_CDN_BYTES,
      SUBJECT_CDN_EVICT,
      jobReportSubject('link-signing'),
      ...durableConsumer(DAM_INTERNAL, 'link-signing-cdn-jobs'),
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [],
  },
  // Addon jobs: their commands in, their reports and addon_runs usage out; answers metadata's questions on its models
  // (a reply to each question it received, never into metadata's inbox as such).
  addon: {
    publish: [JS_INFO, jobReportSubject('addon'), usageSubject('addon_runs'), ...durableConsumer(DAM_INTERNAL, 'addon-jobs')],
    subscribe: [SUBJECT_ADDON_STATUS],
    allowResponses: true,
  },
  // Deliveries of every asset event (its durable), and reissue jobs: their commands in, their reports out.
  webhook: {
    publish: [JS_INFO, ...durableConsumer(ASSET_EVENTS, 'webhook-deliveries'), ...durableConsumer(DAM_INTERNAL, 'webhook-jobs'), jobReportSubject('webhook'), ...SERVICE_TOKEN_IDS],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  search: {
    // Its read model: a durable consumer per stream, and ordered consumers of each for the replay command.
    publish: [
      JS_INFO,
      ...orderedConsumer(ASSET_EVENTS, [ASSET_EVENTS_SUBJECTS]),
      ...orderedConsumer(DATA_SCHEMAS, [DATA_SCHEMAS_SUBJECTS]),
      ...orderedConsumer(COLLECTIONS, [COLLECTIONS_SUBJECTS]),
      ...orderedConsumer(ASSET_PURGES, [ASSET_PURGES_SUBJECTS]),
      ...durableConsumer(ASSET_EVENTS, 'search-index'),
      ...durableConsumer(DATA_SCHEMAS, 'search-schemas'),
      ...durableConsumer(COLLECTIONS, 'search-collections'),
      ...durableConsumer(ASSET_PURGES, 'search-purges'),
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [],
  },
  // Outside systems: read ASSET_EVENTS through consumers of their own (named `subscriber-...` by convention, any name
  // but a service's), nothing else; they publish no event. No listing of the stream's consumers: the names of the
  // services' ordered consumers are random, and stay unknown to it.
  subscriber: {
    publish: [
      JS_INFO,
      `${API}.STREAM.INFO.${ASSET_EVENTS}`,
      `${API}.CONSUMER.CREATE.${ASSET_EVENTS}.*`,
      `${API}.CONSUMER.CREATE.${ASSET_EVENTS}.*.>`,
      `${API}.CONSUMER.DURABLE.CREATE.${ASSET_EVENTS}.*`,
      `${API}.CONSUMER.INFO.${ASSET_EVENTS}.*`,
      `${API}.CONSUMER.DELETE.${ASSET_EVENTS}.*`,
      `${API}.CONSUMER.MSG.NEXT.${ASSET_EVENTS}.*`,
      `$JS.ACK.${ASSET_EVENTS}.*.>`,
    ],
    subscribe: [],
  },
};

/** What `identity` may publish and subscribe to; undefined for `admin` (everything). */
export function natsPermissions(identity: NatsIdentity): SubjectPermissions | undefined {
  if (identity === 'admin') return undefined;
  const p = PERMISSIONS[identity];
  const deny = runTimeNameDenials(identity);
  // Every identity reads the answers to its own requests, under its own inbox prefix only.
  return {
    publish: p.publish,
    ...(deny.length > 0 ? { publishDeny: deny } : {}),
    subscribe: [...p.subscribe, `${inboxPrefixOf(identity)}.>`],
    ...(p.allowResponses ? { allowResponses: true } : {}),
  };
}

export interface NatsUser {
  identity: NatsIdentity;
  /** The secret the service connects with (`SU...`): NATS_NKEY_SEED. */
  seed: string;
  /** What the server holds (`U...`). */
  publicKey: string;
}

/** A fresh nkey user for every identity. */
export function generateNatsUsers(): NatsUser[] {
  const dec = new TextDecoder();
  return NATS_IDENTITIES.map((identity) => {
    const kp = nkeys.createUser();
    return { identity, seed: dec.decode(kp.getSeed()), publicKey: kp.getPublicKey() };
  });
}

/** The public nkey of a seed (to rebuild a server config from stored seeds). */
export const publicKeyOfSeed = (seed: string): string => nkeys.fromSeed(new TextEncoder().encode(seed)).getPublicKey();

const list = (subjects: string[]): string => `[${subjects.map((s) => JSON.stringify(s)).join(', ')}]`;

/** The `authorization` block of a nats-server config: public nkeys and their permissions, no anonymous user. */
export function renderNatsAuthorization(users: Array<Pick<NatsUser, 'identity' | 'publicKey'>>): string {
  const lines = users.map((u) => {
    const p = natsPermissions(u.identity);
    const responses = p?.allowResponses ? ', allow_responses: true' : '';
    const deny = p?.publishDeny ? `, deny: ${list(p.publishDeny)}` : '';
    const perms = p ? `, permissions: { publish: { allow: ${list(p.publish)}${deny} }, subscribe: { allow: ${list(p.subscribe)} }${responses} }` : '';
    return `    # ${u.identity}\n    { nkey: ${JSON.stringify(u.publicKey)}${perms} }`;
  });
  return `authorization {\n  users = [\n${lines.join('\n')}\n  ]\n}\n`;
}
