/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are untyped JSON here */
/**
 * A client of the production form's front door (deploy/production-form/up): https to the Ingress's public hosts,
 * which resolve to the local nginx, trusting the run's CA, from a chosen loopback address (127.0.0.x) so that each
 * test client is a distinct real client address for nginx's X-Forwarded-For.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import path from 'node:path';
import type { State } from '../../deploy/production-form/host';

/** What `up` wrote to state.json that the tests use. */
export type FormState = Pick<
  State,
  | 'dir'
  | 'caFile'
  | 'httpsPort'
  | 'publicHosts'
  | 'adminEmail'
  | 'adminPassword'
  | 'natsServers'
  | 'subscriber'
  | 'subscriberSeed'
  | 'timings'
  | 'initFailures'
  | 'pids'
  | 'containers'
>;

export function formState(): FormState {
  const file = path.join(process.env.DAM_PF_DIR ?? '/tmp/dam-production-form', 'state.json');
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as FormState;
  } catch {
    throw new Error(`${file} is missing: start the production form first (deploy/production-form/up)`);
  }
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json(): any;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  /** The client's own address (127.0.0.x): what nginx sees and forwards. */
  from?: string;
}

export function frontDoor(state: FormState) {
  const ca = readFileSync(state.caFile);
  // The public hosts resolve to the ingress (as DNS would point them at the load balancer); nothing else does.
  const lookup: LookupFunction = (hostname, options, callback) => {
    if (!state.publicHosts.includes(hostname)) {
      callback(Object.assign(new Error(`${hostname} is not a public host of the form`), { code: 'ENOTFOUND' }), '', 4);
      return;
    }
    if (options.all) (callback as any)(null, [{ address: '127.0.0.1', family: 4 }]);
    else callback(null, '127.0.0.1', 4);
  };
  return function request(url: string, o: RequestOptions = {}): Promise<Reply> {
    const u = new URL(url);
    if (u.protocol !== 'https:') return Promise.reject(new Error(`not https: ${url}`));
    return new Promise((resolve, reject) => {
      const req = https.request(
        u,
        { method: o.method ?? 'GET', headers: o.headers, ca, lookup, agent: false, ...(o.from ? { localAddress: o.from } : {}) },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const body = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body.toString()) });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(o.body);
    });
  };
}
