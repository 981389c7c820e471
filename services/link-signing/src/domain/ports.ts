import type { Readable } from 'node:stream';
import type { AccessOwner, DeliveryResponse, DeliveryTransform } from '@dam/internal-api';
import type { Principal } from '@dam/auth-tokens';

/** What the link service asks of the rest of the suite (auth and metadata, over their internal APIs). */
export interface SuiteClients {
  /** The accessID the links this caller mints are signed under (auth): its user's, or its API key's. */
  accessIdOf(principal: Principal): Promise<string>;
  /** Whose links carry this accessID; undefined when no user or live key has it (rotated away, revoked). */
  accessOwner(accessId: string): Promise<AccessOwner | undefined>;
  /**
   * Where each asset's bytes for `key` are, as `principal` may read them (metadata). With `transform` (one id), the
   * transformed image, made once; a busy conversion throws 503 TRANSFORMS_BUSY with its Retry-After.
   */
  delivery(principal: Principal, ids: readonly string[], key: string, transform?: DeliveryTransform): Promise<DeliveryResponse['items']>;
}

/** The object store as the links and the edge read it. */
export interface ObjectReader {
  /** Throws `ObjectNotFoundError` (or the store's not-found) when the object does not exist. */
  getStream(key: string): Promise<Readable>;
  /** Bytes `start..endInclusive`. */
  getRange(key: string, start: number, endInclusive: number): Promise<Readable>;
  /** null when the object does not exist. */
  stat(key: string): Promise<{ size: number; etag: string; lastModified?: Date } | null>;
  /** A presigned GET for a client outside, signed for the public endpoint. */
  presignPublicGet(key: string, expirySeconds: number, options?: { responseContentDisposition?: string; responseContentType?: string }): Promise<string>;
}

export interface CacheEntry {
  /** The object key and its ETag: a new version of an object is another entry. */
  key: string;
  objectKey: string;
  assetId: string;
  file: string;
  size: number;
}

/** The edge's byte cache as serving uses it (adapters/byte-cache.ts). */
export interface EdgeCache {
  /** The entry key of one version of an object. */
  keyOf(objectKey: string, etag: string): string;
  cacheable(size: number): boolean;
  lookup(key: string): CacheEntry | undefined;
  /** The fill under way for this key, if any. */
  pending(key: string): Promise<CacheEntry | undefined> | undefined;
  /** Reads the object once into the cache; `onSource` receives the upstream stream to serve beside the fill. */
  fillFrom(entry: Omit<CacheEntry, 'file'>, open: () => Promise<Readable>, onSource?: (source: Readable) => void): Promise<CacheEntry | undefined>;
}

/** Bytes served, counted per group and user (the usage meter). */
export interface UsageCounter {
  add(groupId: number, userId: number, bytes: number): void;
}
