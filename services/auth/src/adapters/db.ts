import type { Pool, PoolClient } from '@dam/db';
import type { Page } from '../domain/ports';

/** A pool or a client inside a transaction: repositories work with either. */
export type Db = Pool | PoolClient;

export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === '23505';

export const offsetOf = (p: Page): number => (p.page - 1) * p.page_size;
