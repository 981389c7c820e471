import { createServiceSigner, generateServiceKey, parseSigningKey, type CallTarget, type ServiceJwk, type ServiceSigner } from '@dam/auth-tokens';

export interface ServiceIdentities {
  /** `SERVICE_KEY` and `SERVICE_TRUSTED_KEYS` for a service process of this set (trusting every member). */
  env(service: string): { SERVICE_KEY: string; SERVICE_TRUSTED_KEYS: string };
  /** The raw `SERVICE_KEY` text of one member. */
  privateKey(service: string): string;
  /** `SERVICE_TRUSTED_KEYS` text holding the public keys of these members (all of them by default). */
  trustedKeys(services?: readonly string[]): string;
  /** Signs as `service`: test code standing in for a caller (gateway, upload, ...). */
  signer(service: string): ServiceSigner;
  /** One call's header, signed as `service`. */
  headers(service: string, target: CallTarget): Record<string, string>;
}

/**
 * A key pair per service, made on first use, as the local runner makes them for a real deployment. Tests
 * pass `env(name)` to a service and sign their own calls with `headers(caller, ...)`.
 */
export function serviceIdentities(): ServiceIdentities {
  const keys = new Map<string, { privateJwk: ServiceJwk; publicJwk: ServiceJwk }>();
  const signers = new Map<string, ServiceSigner>();
  const pair = (service: string) => {
    let p = keys.get(service);
    if (!p) {
      p = generateServiceKey(service, 'test');
      keys.set(service, p);
    }
    return p;
  };
  for (const s of ['gateway', 'upload', 'auth', 'metadata', 'conversion', 'transcode', 'link-signing', 'search', 'webhook']) pair(s);
  const privateKey = (service: string) => JSON.stringify(pair(service).privateJwk);
  const trustedKeys = (services?: readonly string[]) => JSON.stringify({ keys: (services ?? [...keys.keys()]).map((s) => pair(s).publicJwk) });
  const signer = (service: string): ServiceSigner => {
    let s = signers.get(service);
    if (!s) {
      s = createServiceSigner(parseSigningKey(privateKey(service)));
      signers.set(service, s);
    }
    return s;
  };
  return {
    env: (service) => ({ SERVICE_KEY: privateKey(service), SERVICE_TRUSTED_KEYS: trustedKeys() }),
    privateKey,
    trustedKeys,
    signer,
    headers: (service, target) => signer(service).headers(target),
  };
}
