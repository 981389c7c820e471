import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'dam_';

/** 32 random bytes: far too much entropy to guess, so a fast hash (not a KDF) is enough to store it. */
export const generateApiKey = (): string => API_KEY_PREFIX + randomBytes(32).toString('base64url');

export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

export const looksLikeApiKey = (key: string): boolean => key.startsWith(API_KEY_PREFIX) && key.length <= 256;
