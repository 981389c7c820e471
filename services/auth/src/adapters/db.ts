import type { Pool, PoolClient } from '@dam/db';

/** A pool or a client inside a transaction: repositories work with either. */
export type Db = Pool | PoolClient;

export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === '23505';

export interface Page {
  page: number;
  page_size: number;
}

export const offsetOf = (p: Page): number => (p.page - 1) * p.page_size;
