import { createHash, randomUUID } from 'node:crypto';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import {
  assetEventSubject,
  connectNats,
  CONVERSIONS_COMPLETED,
  DAM_INTERNAL,
  ensureStreams,
  FILE_SAVED,
  publishEvent,
  type ConversionsCompleted,
  type FileSavedEvent,
} from '@dam/events';
import { createStorage, originalKey, type Storage } from '@dam/storage';
import { createBucket, s3Env, startNats, testS3Config, waitFor, type TestNats } from '@dam/testing';
import { identities } from './settings-stub.server';

type Nc = Awaited<ReturnType<typeof connectNats>>;

/** Real NATS, a fresh bucket, and every conversions-completed report stored on DAM_INTERNAL, in order. */
export interface Harness {
  nats: TestNats;
  nc: Nc;
  js: JetStreamClient;
  storage: Storage;
  bucket: string;
  reports: ConversionsCompleted[];
  env(extra?: Record<string, string>): Record<string, string>;
  putOriginal(groupId: string, assetId: string, bytes: Buffer): Promise<string>;
  publishFileSaved(groupId: string, assetId: string, file: { checksum: string; contentType: string; size: number }): Promise<number>;
  reportFor(assetId: string, timeoutMs?: number): Promise<ConversionsCompleted>;
  close(): Promise<void>;
}

export async function startHarness(): Promise<Harness> {
  const nats = await startNats();
  const nc = await connectNats(nats.url, 'conversion-test', nats.seed('admin'));
  await ensureStreams(nc);
  const js = jetstream(nc);
  const bucket = await createBucket('conversion');
  const storage = createStorage(testS3Config(bucket));

  // An ordered consumer sees what the stream stored: a report de-duplicated by Nats-Msg-Id appears once.
  const reports: ConversionsCompleted[] = [];
  // No server-side filter: filter_subjects needs nats-server 2.10 and Debian ships 2.9.
  const ordered = await js.consumers.get(DAM_INTERNAL);
  const messages = await ordered.consume();
  void (async () => {
    for await (const m of messages) {
      if (m.subject === CONVERSIONS_COMPLETED.subject) reports.push(CONVERSIONS_COMPLETED.schema.parse(m.json()));
    }
  })();

  return {
    nats,
    nc,
    js,
    storage,
    bucket,
    reports,
    env: (extra = {}) => ({
      ...nats.env('conversion'),
      SERVICE_KEY: identities.privateKey('conversion'),
      ...s3Env(bucket),
      OTEL_SDK_DISABLED: 'true',
      ...extra,
    }),
    async putOriginal(groupId, assetId, bytes) {
      await storage.putBuffer(originalKey(groupId, assetId), bytes, { contentType: 'application/octet-stream' });
      return createHash('md5').update(bytes).digest('hex');
    },
    async publishFileSaved(groupId, assetId, file) {
      const now = new Date().toISOString();
      const event: FileSavedEvent = {
        id: randomUUID(),
        type: 'file-saved',
        time: now,
        group_id: groupId,
        asset_id: assetId,
        version: 1,
        data: {
          id: assetId,
          status: 'NOT_READY',
          name: `${assetId}.bin`,
          size: file.size,
          checksum: file.checksum,
          content_type: file.contentType,
          creator_id: 1,
          upload_time: now,
          update_time: now,
          metadata: {},
          data: {},
          conversions: {},
          addons_info: {},
        },
      };
      const ack = await publishEvent(js, assetEventSubject(groupId, 'file-saved'), FILE_SAVED.schema, event, { msgId: event.id });
      return ack.seq;
    },
    reportFor: (assetId, timeoutMs = 30_000) =>
      waitFor(() => reports.find((r) => r.asset_id === assetId), { timeoutMs, description: `report for ${assetId}` }),
    async close() {
      messages.stop();
      await nc.drain();
      await nats.stop();
    },
  };
}
