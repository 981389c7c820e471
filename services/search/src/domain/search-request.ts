import { z } from 'zod';

/** The largest result set kept (Limits: 10,000 per result set). */
export const RESULT_CAP = 10_000;

const DATA_FIELD = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const range = <T extends z.ZodType>(t: T) => z.strictObject({ from: t.optional(), to: t.optional() });
const time = z.iso.datetime({ offset: true });
const dataValue = z.union([z.string().max(500), z.number(), z.boolean()]);

/** Facets that are fields of the model (besides `tags` and `data.<field>`). */
export const FACET_FIELDS: readonly string[] = ['content_type', 'creator_id', 'status'];

/** CONTRACT §8. Unknown members, sorts and facets are refused (400 with details), never ignored. */
export const searchRequest = z.strictObject({
  query: z.string().max(500).optional(),
  filters: z
    .strictObject({
      name: z.string().min(1).max(255).optional(),
      content_type: z
        .array(z.string().regex(/^[\w.+-]+\/(\*|[\w.+-]+)$/, 'must be a MIME type or type/*'))
        .max(20)
        .optional(),
      upload_time: range(time).optional(),
      update_time: range(time).optional(),
      size: z.strictObject({ min: z.number().int().nonnegative().optional(), max: z.number().int().nonnegative().optional() }).optional(),
      status: z
        .array(z.enum(['OK', 'NOT_READY', 'ERROR', 'ARCHIVED']))
        .max(4)
        .optional(),
      creator_id: z.number().int().positive().optional(),
      collection_id: z.string().min(1).optional(),
      data: z
        .record(z.string().regex(DATA_FIELD, 'must be a custom data field name'), z.union([dataValue, range(z.union([z.string().max(500), z.number()]))]))
        .optional(),
    })
    .default({}),
  sort: z
    .array(
      z.strictObject({
        field: z
          .string()
          .refine((f) => ['relevance', 'upload_time', 'update_time', 'name', 'size'].includes(f) || /^data\.[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/.test(f), {
            message: 'must be relevance, upload_time, update_time, name, size or data.<field>',
          }),
        order: z.enum(['asc', 'desc']).default('desc'),
      }),
    )
    .max(5)
    .optional(),
  page_size: z.number().int().min(1).max(100).default(25),
  extended: z.boolean().default(false),
  trashed: z.boolean().default(false),
  facets: z
    .array(
      z.string().refine((f) => FACET_FIELDS.includes(f) || f === 'tags' || /^data\.[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/.test(f), {
        message: 'must be content_type, creator_id, status, tags or data.<field>',
      }),
    )
    .max(10)
    .default([]),
});
export type SearchRequest = z.infer<typeof searchRequest>;

/** Who searches: the group, the caller, and its own assets only when it reads nothing else (CREATOR). */
export interface Scope {
  groupId: number;
  /** The caller: a collection filter names one of its own collections or a shared one of the group. */
  userId: number;
  /** Set when the caller reads only its own assets (CREATOR). */
  creatorId?: number;
}

/** Facet counts by facet asked: each value with how many matched assets have it. */
export type Facets = Record<string, Array<{ value: unknown; count: number }>>;

/** A search's stored result: the matched ids in order with their scores, paged `page_size` at a time. */
export interface ResultSet {
  id: string;
  ids: string[];
  scores: number[];
  capped: boolean;
  page_size: number;
  extended: boolean;
  facets: Facets;
}

/** One page of a stored set: the set's own fields, how many ids it holds (`total`), and the page's ids and scores. */
export type SetPage = Omit<ResultSet, 'ids' | 'scores'> & { total: number; ids: string[]; scores: number[] };

/** One indexed asset as a page shows it (`doc` is the asset as its last event carried it, for `extended`). */
export interface IndexedAsset {
  id: string;
  name: string;
  size: number;
  content_type: string;
  status: string;
  upload_time: Date;
  doc: unknown;
}
