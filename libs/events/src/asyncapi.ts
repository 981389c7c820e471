/**
 * docs/asyncapi.yaml, made from the zod schemas the services publish and validate with (the one source): an
 * AsyncAPI 3 document of the public stream ASSET_EVENTS. Rewrite it with
 *   pnpm --filter @dam/events asyncapi
 * (libs/events/test/asyncapi.unit.test.ts fails when it is out of date, and validates it with @asyncapi/parser).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { z } from 'zod';
import { ASSET_EVENT_SCHEMAS } from './schemas/asset-event.schema';
import { ASSET_EVENT_TYPES, ASSET_EVENTS, type AssetEventType } from './subjects';

export const ASYNCAPI_PATH = path.resolve(__dirname, '..', '..', '..', 'docs', 'asyncapi.yaml');

const WHEN: Record<AssetEventType, string> = {
  'file-saved': 'An asset was created (upload, ingest) or its original replaced: status NOT_READY until processing ends.',
  'file-processed':
    "The profile's conversions, transcodes and addons are done (status OK or ERROR), or a requested processing or an added conversion changed the outputs.",
  'file-data-updated': 'The custom data of an asset changed (Update Data, bulk update).',
  'file-deleted': 'Delete removed the original (the asset went to the trash), conversions or addon results; `keys` as asked.',
  'file-undeleted': 'An asset came back from the trash.',
  'addon-processed': 'An addon run completed; its result is kept with the asset (`addons_info.<addon>.available`).',
};

const camel = (type: string): string => type.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
const pascal = (type: string): string => camel(type).replace(/^[a-z]/, (c) => c.toUpperCase());

export function asyncApiDocument(): Record<string, unknown> {
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const messages: Record<string, unknown> = {};
  const schemas: Record<string, unknown> = {};
  for (const type of ASSET_EVENT_TYPES) {
    const name = camel(type);
    const { $schema: _dialect, ...schema } = z.toJSONSchema(ASSET_EVENT_SCHEMAS[type], { target: 'draft-7', io: 'output' }) as Record<string, unknown>;
    schemas[`${pascal(type)}Event`] = schema;
    messages[name] = {
      name: type,
      title: type,
      summary: WHEN[type],
      contentType: 'application/json',
      headers: { $ref: '#/components/schemas/NatsHeaders' },
      payload: { $ref: `#/components/schemas/${pascal(type)}Event` },
    };
    channels[name] = {
      address: `assets.events.{group_id}.${type}`,
      title: type,
      description: `Stream ${ASSET_EVENTS}. ${WHEN[type]}`,
      parameters: { group_id: { $ref: '#/components/parameters/group_id' } },
      messages: { [name]: { $ref: `#/components/messages/${name}` } },
    };
    operations[`receive${pascal(type)}`] = {
      action: 'receive',
      title: `Receive ${type}`,
      channel: { $ref: `#/channels/${name}` },
      messages: [{ $ref: `#/channels/${name}/messages/${name}` }],
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'DAM asset events',
      version: '1.0.0',
      description: [
        `Every change of an asset is announced on the NATS JetStream stream \`${ASSET_EVENTS}\`, subject`,
        '`assets.events.<group_id>.<event>`, after the change is committed (a transactional outbox): nothing committed is',
        'left unannounced, nothing unannounced is visible.',
        '',
        "**Delivery.** At least once: read the stream with a JetStream pull consumer as your system's own read-only NATS",
        'user `subscriber-<your system>` (an nkey seed the operator makes for you and gives you). It may act on exactly one',
        "consumer of ASSET_EVENTS, named as the user (`durable_name: 'subscriber-<your system>'`: it resumes where you",
        'left off; delete and make it again with `deliver_policy` `all` to replay), and on nothing else: no other',
        'consumer, no listing, no publishing, replies under `_INBOX_subscriber-<your system>` only. A message may come twice: `id` (also the',
        '`Nats-Msg-Id` header) is unique per event, so dedupe on it. Events of one asset are published in the order of',
        'its changes; `version` grows with every change, so keep per asset the highest version applied and ignore older',
        'ones (last writer wins). The stream keeps 30 days of events (replays further back are not possible).',
        '',
        'The same events reach webhooks (CONTRACT §11), signed per Standard Webhooks.',
      ].join('\n'),
    },
    defaultContentType: 'application/json',
    servers: {
      nats: {
        host: 'nats.example.com:4222',
        protocol: 'nats',
        description: "The suite's NATS JetStream (locally `nats://127.0.0.1:4222`).",
        security: [{ $ref: '#/components/securitySchemes/subscriberNkey' }],
      },
    },
    channels,
    operations,
    components: {
      parameters: { group_id: { description: 'The group the asset belongs to (a positive integer).' } },
      securitySchemes: {
        subscriberNkey: {
          type: 'asymmetricEncryption',
          description:
            "A NATS nkey user (ed25519): the seed of your system's read-only `subscriber-<system>` user (locally NATS_NKEY_SEED_SUBSCRIBER_EXAMPLE).",
        },
      },
      messages,
      schemas: {
        NatsHeaders: {
          type: 'object',
          properties: {
            'Nats-Msg-Id': { type: 'string', description: 'The event `id`: JetStream drops a republished duplicate within two minutes.' },
            traceparent: { type: 'string', description: 'W3C trace context of the request that caused the event, when traced.' },
          },
        },
        ...schemas,
      },
    },
  };
}

export const renderAsyncApi = (): string =>
  `# Generated by libs/events/src/asyncapi.ts from the events' zod schemas: \`pnpm --filter @dam/events asyncapi\`.\n${stringify(asyncApiDocument(), { lineWidth: 0, aliasDuplicateObjects: false })}`;

if (require.main === module) {
  writeFileSync(ASYNCAPI_PATH, renderAsyncApi());
  console.log(`wrote ${path.relative(process.cwd(), ASYNCAPI_PATH)}`);
}
