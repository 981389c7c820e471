import { nkeys } from '@nats-io/nats-core';
import { noticeSubject } from './schemas/notice.event';
import { SETTINGS_NOTICES_SUBJECTS } from './settings-notices';
import {
  ASSET_EVENTS,
  ASSET_EVENTS_SUBJECTS,
  ASSET_PURGES,
  ASSET_PURGES_SUBJECTS,
  COLLECTIONS,
  COLLECTIONS_SUBJECTS,
  DAM_INTERNAL,
  DATA_SCHEMAS,
  DATA_SCHEMAS_SUBJECTS,
  SUBJECT_ADDON_STATUS,
  SUBJECT_ASSETS_CHANGED,
  SUBJECT_CDN_EVICT,
  SUBJECT_USAGE_CDN_BYTES,
  SUBJECT_USAGE_PREFIX,
  jobReportSubject,
  usageSubject,
} from './subjects';

/**
 * NATS identities of the suite (ARCHITECTURE rule 9): one nkey user per service with publish/subscribe
 * permissions per subject, `admin` for operators and tests, and one read-only user per outside system
 * (`subscriber-<system>`, see SubscriberIdentity). The server holds only public nkeys; no anonymous user exists, so a
 * connection without a seed is refused.
 */
export const NATS_IDENTITIES = [
  'admin',
  'gateway',
  'auth',
  'metadata',
  'upload',
  'conversion',
  'transcode',
  'link-signing',
  'addon',
  'webhook',
  'search',
] as const;
export type ServiceIdentity = (typeof NATS_IDENTITIES)[number];

/**
 * An outside system reading asset events: its own NATS user, which may act on exactly one consumer of ASSET_EVENTS,
 * named as the identity (security review F4: outside subscribers' consumers are under `subscriber-`, and one system
 * cannot touch another's).
 */
export type SubscriberIdentity = `subscriber-${string}`;
export type NatsIdentity = ServiceIdentity | SubscriberIdentity;

/** `subscriber-` and a lower-case name: a valid NATS user label, consumer name and subject token. */
const SUBSCRIBER_NAME = /^subscriber-[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;

export function isSubscriberIdentity(value: string): value is SubscriberIdentity {
  return SUBSCRIBER_NAME.test(value);
}

/** The outside systems the local suite and the tests make a user for when none are named (docs, examples). */
export const DEFAULT_SUBSCRIBERS: readonly SubscriberIdentity[] = ['subscriber-example'];

/** The outside systems of a comma-separated list (NATS_SUBSCRIBERS, --subscribers): names checked, no repeats. */
export function parseSubscribers(list: string): SubscriberIdentity[] {
  const names = [
    ...new Set(
      list
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const bad = names.filter((n) => !isSubscriberIdentity(n));
  if (bad.length > 0) throw new Error(`not a subscriber identity (subscriber-<a-z0-9 and ->, at most 51 characters): ${bad.join(', ')}`);
  return names as SubscriberIdentity[];
}

export interface SubjectPermissions {
  publish: string[];
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
 * The consumer of `stream` that search's replay command reads it with (a fixed name, one replay at a time), e.g.
 * `search-replay-asset-events`.
 */
export const replayConsumerName = (stream: string): string => `search-replay-${stream.toLowerCase().replace(/_/g, '-')}`;

/**
 * The consumers of each service, every one named `<identity>-...` (F4 of the security review): an identity may act on
 * its own consumers only, by exact name; no service names a consumer at run time. A service's consumer constant must
 * stay equal to its entry here.
 */
export const NATS_DURABLES: { readonly [I in NatsIdentity]?: ReadonlyArray<{ stream: string; name: string }> } = {
  auth: [
    { stream: DAM_INTERNAL, name: 'auth-usage' },
    { stream: DAM_INTERNAL, name: 'auth-notices' },
  ],
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
    ...[ASSET_EVENTS, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES].map((stream) => ({ stream, name: replayConsumerName(stream) })),
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

/**
 * A KV bucket: its backing stream, puts and deletes, reads; no consumers (key listings, watches): on a shared bucket a
 * consumer of one identity would be open to the others (security review F4), and no identity lists a bucket now (the
 * pending-upload journal, which did, is in upload's database since issue 35).
 */
function kvBucket(bucket: string): string[] {
  const stream = `KV_${bucket}`;
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.STREAM.CREATE.${stream}`,
    `${API}.STREAM.UPDATE.${stream}`,
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
    `$KV.${bucket}.>`,
  ];
}

/**
 * The used service-token ids shared by the replicas of each service that verifies service tokens (security review
 * I6): a token is single-use across replicas, not only per process (see service-token-bucket.ts).
 */
const SERVICE_TOKEN_IDS = kvBucket('SERVICE_TOKENS');

/** Creating and updating the streams: metadata's alone (it owns ASSET_EVENTS, the schemas and the outbox). */
const STREAM_ADMIN = [ASSET_EVENTS, DAM_INTERNAL, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES].flatMap((s) => [
  `${API}.STREAM.INFO.${s}`,
  `${API}.STREAM.CREATE.${s}`,
  `${API}.STREAM.UPDATE.${s}`,
]);

const PERMISSIONS: Record<Exclude<ServiceIdentity, 'admin'>, SubjectPermissions> = {
  // The API requests it counts (usage statistics). Idempotency-Key responses are in its database, not here. It hears
  // metadata's notices of changed assets for its Get Data cache.
  gateway: { publish: [JS_INFO, usageSubject('api_requests')], subscribe: [SUBJECT_ASSETS_CHANGED] },
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
      // The notices of other services for Login's notifications (failed jobs, failing webhooks).
      ...durableConsumer(DAM_INTERNAL, 'auth-notices').filter((s) => s !== `${API}.STREAM.INFO.${DAM_INTERNAL}`),
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
      // Which assets' records changed, to the gateways' Get Data caches (the asset_changed trigger, relayed).
      SUBJECT_ASSETS_CHANGED,
      // Its users' failed jobs, for their next login (through the outbox).
      noticeSubject('job-failed'),
      ...durableConsumer(DAM_INTERNAL, 'metadata-job-reports'),
      // Replaced once when its filter changed (from the single report subject to one per worker kind).
      `${API}.CONSUMER.DELETE.${DAM_INTERNAL}.metadata-job-reports`,
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  upload: {
    // Ingest jobs: their commands in, their reports out. (Its pending-upload journal, Idempotency-Key responses and
    // the leases of resumable uploads are in its database.)
    publish: [JS_INFO, jobReportSubject('upload'), ...durableConsumer(DAM_INTERNAL, 'upload-jobs')],
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
    // Hears asset events as they are published to drop cached bytes of replaced and deleted assets (every replica its
    // own cache; a plain subscription, no consumer); publishes the bytes it served for usage (CONTRACT §9).
    // Takes CDN prefetch and purge jobs like any worker; a purge is published to every replica, which hears it on
    // that one subject.
    publish: [
      JS_INFO,
      SUBJECT_USAGE_CDN_BYTES,
      SUBJECT_CDN_EVICT,
      jobReportSubject('link-signing'),
      ...durableConsumer(DAM_INTERNAL, 'link-signing-cdn-jobs'),
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [ASSET_EVENTS_SUBJECTS, SUBJECT_CDN_EVICT],
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
    publish: [
      JS_INFO,
      ...durableConsumer(ASSET_EVENTS, 'webhook-deliveries'),
      ...durableConsumer(DAM_INTERNAL, 'webhook-jobs'),
      jobReportSubject('webhook'),
      // Deliveries that gave up, for the next login of the group's managers (through its outbox).
      noticeSubject('webhook-failed'),
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [SETTINGS_NOTICES_SUBJECTS],
  },
  search: {
    // Its read model: a durable consumer per stream, and for the replay command one consumer per stream under a fixed
    // name, made, read from the start and deleted.
    publish: [
      JS_INFO,
      ...[ASSET_EVENTS, DATA_SCHEMAS, COLLECTIONS, ASSET_PURGES].flatMap((stream) => consumerSubjects(stream, replayConsumerName(stream))),
      ...durableConsumer(ASSET_EVENTS, 'search-index'),
      ...durableConsumer(DATA_SCHEMAS, 'search-schemas'),
      ...durableConsumer(COLLECTIONS, 'search-collections'),
      ...durableConsumer(ASSET_PURGES, 'search-purges'),
      ...SERVICE_TOKEN_IDS,
    ],
    subscribe: [],
  },
};

/**
 * An outside system: reads ASSET_EVENTS through the one consumer named as itself (made, read, acknowledged, deleted),
 * nothing else; it publishes no event and cannot list the stream's consumers.
 */
function subscriberPermissions(identity: SubscriberIdentity): SubjectPermissions {
  return { publish: [JS_INFO, `${API}.STREAM.INFO.${ASSET_EVENTS}`, ...consumerSubjects(ASSET_EVENTS, identity)], subscribe: [] };
}

/** What `identity` may publish and subscribe to; undefined for `admin` (everything). */
export function natsPermissions(identity: NatsIdentity): SubjectPermissions | undefined {
  if (identity === 'admin') return undefined;
  let p: SubjectPermissions;
  if (isSubscriberIdentity(identity)) p = subscriberPermissions(identity);
  else if (identity in PERMISSIONS) p = PERMISSIONS[identity as Exclude<ServiceIdentity, 'admin'>];
  else throw new Error(`unknown NATS identity ${identity}`);
  // Every identity reads the answers to its own requests, under its own inbox prefix only.
  return {
    publish: p.publish,
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

/** A fresh nkey user for every service identity, `admin`, and each outside system of `subscribers`. */
export function generateNatsUsers(subscribers: readonly SubscriberIdentity[] = DEFAULT_SUBSCRIBERS): NatsUser[] {
  const dec = new TextDecoder();
  return [...NATS_IDENTITIES, ...subscribers].map((identity: NatsIdentity) => {
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
    const perms = p ? `, permissions: { publish: { allow: ${list(p.publish)} }, subscribe: { allow: ${list(p.subscribe)} }${responses} }` : '';
    return `    # ${u.identity}\n    { nkey: ${JSON.stringify(u.publicKey)}${perms} }`;
  });
  return `authorization {\n  users = [\n${lines.join('\n')}\n  ]\n}\n`;
}
