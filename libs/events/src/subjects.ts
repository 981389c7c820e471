/** Public stream of asset events; subjects `assets.events.<group_id>.<event>` (CONTRACT §10). */
export const ASSET_EVENTS = 'ASSET_EVENTS';
export const ASSET_EVENTS_SUBJECTS = 'assets.events.>';

/** Internal commands and reports between services; never exposed to outside subscribers. */
export const DAM_INTERNAL = 'DAM_INTERNAL';
export const DAM_INTERNAL_SUBJECTS = 'dam.internal.>';

/**
 * The searchable parts of asset schemas (their `service_properties`), for the search read model: one subject
 * per schema, `dam.schemas.<group_id>.<schema_id>`, and the stream keeps the last message of each for ever.
 */
export const DATA_SCHEMAS = 'DATA_SCHEMAS';
export const DATA_SCHEMAS_SUBJECTS = 'dam.schemas.>';
export const dataSchemaSubject = (groupId: number | string, schemaId: number): string =>
  `dam.schemas.${assertSubjectToken(String(groupId), 'group id')}.${schemaId}`;

/**
 * Collections as the search read model needs them (CONTRACT §9): per asset, the collections it is in
 * (`dam.collections.<group_id>.asset.<asset_id>`), and per collection, who sees it
 * (`dam.collections.<group_id>.collection.<collection_id>`). Each message is a whole state, not a change, and the
 * stream keeps the last message of each subject for ever.
 */
export const COLLECTIONS = 'COLLECTIONS';
export const COLLECTIONS_SUBJECTS = 'dam.collections.>';
export const collectionMembershipSubject = (groupId: number | string, assetId: string): string =>
  `dam.collections.${assertSubjectToken(String(groupId), 'group id')}.asset.${assertSubjectToken(assetId, 'asset id')}`;
export const collectionStateSubject = (groupId: number | string, collectionId: string): string =>
  `dam.collections.${assertSubjectToken(String(groupId), 'group id')}.collection.${assertSubjectToken(collectionId, 'collection id')}`;

/**
 * Assets purged from the trash (no public event: the specification raises events only through Delete and
 * Undelete), for read models to forget them: `dam.purges.<group_id>`, kept a day longer than ASSET_EVENTS so a
 * replay of every event still in that stream also sees every purge of those assets.
 */
export const ASSET_PURGES = 'ASSET_PURGES';
export const ASSET_PURGES_SUBJECTS = 'dam.purges.>';
export const assetPurgeSubject = (groupId: number | string): string => `dam.purges.${assertSubjectToken(String(groupId), 'group id')}`;

/**
 * The worker kinds, each named after its service; link-signing runs CDN prefetch and purge jobs against its byte
 * cache, webhook the reissue of callbacks, addon the image addons (text extraction, tagging, ...).
 */
export const JOB_WORKERS = ['conversion', 'transcode', 'upload', 'link-signing', 'webhook', 'addon'] as const;
export type JobWorker = (typeof JOB_WORKERS)[number];
/** metadata → a worker kind: run (or re-run) one job. `dam.internal.jobs.run.<worker>` */
export const jobCommandSubject = (worker: JobWorker): string => `dam.internal.jobs.run.${worker}`;
/**
 * Every worker → metadata: progress and results of jobs, each worker kind on a subject of its own,
 * `dam.internal.jobs.reports.<worker>`, that only that kind's identity may publish. NATS does not tell a consumer who
 * published a message; the subject does, so metadata applies a report only to a job of the kind it names.
 */
export const SUBJECT_JOB_REPORTS = 'dam.internal.jobs.reports';
/** Metadata's filter: the reports of every worker kind. */
export const JOB_REPORTS_FILTER = `${SUBJECT_JOB_REPORTS}.*`;
export const jobReportSubject = (worker: JobWorker): string => `${SUBJECT_JOB_REPORTS}.${worker}`;
/** The worker kind whose identity published on `subject` (`dam.internal.jobs.reports.<worker>`), or undefined. */
export function jobReportWorkerOf(subject: string): JobWorker | undefined {
  const prefix = `${SUBJECT_JOB_REPORTS}.`;
  if (!subject.startsWith(prefix)) return undefined;
  return workerKind(subject.slice(prefix.length));
}
/** The worker kind of a lease holder's id (`<worker>@<host>:<pid>`, see workerId), or undefined. */
export const workerKindOf = (holder: string): JobWorker | undefined => workerKind(holder.split('@')[0] ?? '');
const workerKind = (name: string): JobWorker | undefined => ((JOB_WORKERS as readonly string[]).includes(name) ? (name as JobWorker) : undefined);

/**
 * Usage counted by the service that sees it, for the usage owner (auth) to aggregate: `dam.internal.usage.<metric>`.
 * Each metric's subject may be published by its counting service alone, so the subject names the metric a record
 * may carry (auth drops a record whose metric is not its subject's).
 */
export const SUBJECT_USAGE_CDN_BYTES = 'dam.internal.usage.cdn_bytes';
export const SUBJECT_USAGE_PREFIX = 'dam.internal.usage';
export const usageSubject = (metric: string): string => `${SUBJECT_USAGE_PREFIX}.${assertSubjectToken(metric, 'metric')}`;
/** The metric a `dam.internal.usage.<metric>` subject names (not checked against the known metrics), or undefined. */
export function usageMetricOf(subject: string): string | undefined {
  const parts = subject.split('.');
  return parts.length === 4 && `${parts[0]}.${parts[1]}.${parts[2]}` === SUBJECT_USAGE_PREFIX ? parts[3] : undefined;
}
/** link-signing → every link-signing replica: drop these cached objects (a purge job reaches every replica's cache). */
export const SUBJECT_CDN_EVICT = 'dam.internal.cdn.evict';
/**
 * metadata → addon (request and reply): which addons' models loaded. Outside every stream's subjects: a request on a
 * stream's subject would be stored and answered by JetStream's acknowledgement.
 */
export const SUBJECT_ADDON_STATUS = 'dam.rpc.addons.status';
/**
 * metadata → every gateway replica: these assets' records changed (a JSON array of asset ids, or `["*"]` when notices
 * may have been missed), so a Get Data kept by the gateway's read cache is dropped. Plain NATS, outside every stream's
 * subjects: a notice is of use only now, and a gateway that missed some empties its cache (see the gateway's
 * read-cache follower).
 */
export const SUBJECT_ASSETS_CHANGED = 'dam.notify.assets.changed';

export const ASSET_EVENT_TYPES = ['file-saved', 'file-processed', 'file-data-updated', 'file-deleted', 'file-undeleted', 'addon-processed'] as const;
export type AssetEventType = (typeof ASSET_EVENT_TYPES)[number];

// A subject token may not be empty or contain separators or wildcards; a group id that does would publish onto
// (or subscribe to) the wrong subjects.
const SUBJECT_TOKEN = /^[^\s.*>]+$/;

export function assertSubjectToken(value: string, what: string): string {
  if (!SUBJECT_TOKEN.test(value)) throw new Error(`${what} "${value}" cannot be used as a NATS subject token`);
  return value;
}

/** `assets.events.<group_id>.<event>` */
export function assetEventSubject(groupId: string | number, event: AssetEventType): string {
  return `assets.events.${assertSubjectToken(String(groupId), 'group id')}.${event}`;
}

/** Filter for every event of one group (`assets.events.<group_id>.*`) or one event of every group. */
export function assetEventFilter(groupId: string | number | '*', event: AssetEventType | '*' = '*'): string {
  const group = groupId === '*' ? '*' : assertSubjectToken(String(groupId), 'group id');
  return `assets.events.${group}.${event}`;
}

/** The event name of an `assets.events.<group_id>.<event>` subject, or undefined for any other subject. */
export function assetEventTypeOf(subject: string): AssetEventType | undefined {
  const parts = subject.split('.');
  if (parts.length !== 4 || parts[0] !== 'assets' || parts[1] !== 'events') return undefined;
  return (ASSET_EVENT_TYPES as readonly string[]).includes(parts[3] ?? '') ? (parts[3] as AssetEventType) : undefined;
}
