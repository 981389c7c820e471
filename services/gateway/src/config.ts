import { z } from 'zod';
import { serviceKeyEnv } from '@dam/auth-tokens';
import { baseEnv, jwtEnv, loadConfig, serviceUrl } from '@dam/config';

const schema = z.object({
  ...baseEnv(8080),
  ...jwtEnv,
  ...serviceKeyEnv('gateway'),
  /** How long the edge reuses a JWT user's status from auth: the delay before disabling a user applies. */
  USER_STATUS_TTL_MS: z.coerce.number().int().min(0).default(10_000),
  AUTH_URL: serviceUrl(8090),
  METADATA_URL: serviceUrl(8091),
  SEARCH_URL: serviceUrl(8092),
  LINK_SIGNING_URL: serviceUrl(8082),
  /** Idle time on an upstream socket before the request is abandoned (503 if nothing was sent yet). */
  UPSTREAM_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** Per caller (user, API key, or address for login/validate); 0 turns the limit off. */
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(0).default(1200),
  RATE_LIMIT_BURST: z.coerce.number().int().positive().default(200),
  /** Every request per client address, counted before credentials are checked; 0 turns it off. */
  RATE_LIMIT_ADDRESS_PER_MINUTE: z.coerce.number().int().min(0).default(6000),
  RATE_LIMIT_ADDRESS_BURST: z.coerce.number().int().positive().default(600),
  /** Failed authentications (bad JWT or API key) per client address; beyond them it gets 429 without a lookup. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().min(0).default(60),
  AUTH_FAILURES_BURST: z.coerce.number().int().positive().default(100),
});

export type GatewayConfig = z.infer<typeof schema>;

export const loadGatewayConfig = (env: NodeJS.ProcessEnv = process.env): GatewayConfig => loadConfig(schema, env);
