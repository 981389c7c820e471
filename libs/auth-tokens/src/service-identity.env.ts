import { z } from 'zod';
import { parseSigningKey, parseTrustedKeys, type SigningKey, type TrustedKey } from './service-token';

/** Turns a parser's exception into one config problem, so a bad key is listed with every other bad variable. */
const parsedWith = <T>(parse: (text: string) => T) =>
  z
    .string()
    .min(1)
    .transform((text, ctx): T => {
      try {
        return parse(text);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: error instanceof Error ? error.message : String(error) });
        return z.NEVER;
      }
    });

/** `SERVICE_KEY`: this service's own private JWK; its kid must name `service`. Every service that calls another has one. */
export const serviceKeyEnv = (service: string) => ({
  SERVICE_KEY: parsedWith<SigningKey>((text) => parseSigningKey(text, service)),
});

/** `SERVICE_TRUSTED_KEYS`: the JWK Set of callers' public keys. Every service with internal routes has one. */
export const trustedKeysEnv = {
  SERVICE_TRUSTED_KEYS: parsedWith<Map<string, TrustedKey>>(parseTrustedKeys),
};
