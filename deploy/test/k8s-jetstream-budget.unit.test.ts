/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * Production form D6 (issue 31), its left-overs: JetStream's budget (NATS_STREAMS_MAX_BYTES) reaches every service that
 * sizes part of it, as rendered by both overlays: metadata the streams, and each service that opens a KV bucket that
 * bucket (`kvBucketOptions(...)` in its main.ts); all read one value, below JetStream's max_file_store.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { kvBucketMaxBytes, streamMaxBytes } from '@dam/events';
import { SERVICES } from '../k8s/services';
import { build, OVERLAYS, ROOT } from './k8s-render';

/** The services whose start-up sizes streams or buckets, from their code. */
const SIZERS = SERVICES.map((s) => s.name).filter((name) => {
  const main = readFileSync(path.join(ROOT, 'services', name, 'src', 'main.ts'), 'utf8');
  return /\bkvBucketOptions\(|\bensureStreams\(/.test(main);
});

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  const objects = build(overlay);
  const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);
  /** A container's environment as the kubelet gives it: its ConfigMaps, then its own variables. */
  const envOf = (c: any): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const f of c.envFrom ?? []) Object.assign(env, find('ConfigMap', f.configMapRef?.name)?.data ?? {});
    for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    return env;
  };

  it('gives every service that sizes streams or buckets the same budget, which with the buckets fits under max_file_store', () => {
    // upload sizes none since its resumable-upload leases moved to its database (issue 35).
    expect(SIZERS).toEqual(expect.arrayContaining(['metadata', 'auth']));
    const budgets = Object.fromEntries(SIZERS.map((name) => [name, envOf(find('Deployment', name).spec.template.spec.containers[0]).NATS_STREAMS_MAX_BYTES]));
    const budget = Number(budgets.metadata);
    expect(budget).toBeGreaterThan(0);
    expect(budgets).toEqual(Object.fromEntries(SIZERS.map((name) => [name, String(budget)])));

    const nats = find('StatefulSet', 'nats').spec.template.spec.containers[0];
    const cap = Number(nats.env.find((e: any) => e.name === 'JS_MAX_FILE_STORE').value);
    const reserved = [...Object.values(streamMaxBytes(budget)), ...Object.values(kvBucketMaxBytes(budget))].reduce((a, b) => a + b, 0);
    console.log(
      `${overlay}: NATS_STREAMS_MAX_BYTES ${budget} for ${SIZERS.join(', ')}; streams and buckets reserve ${reserved} of max_file_store ${cap} (${((100 * reserved) / cap).toFixed(0)} %)`,
    );
    expect(reserved).toBeLessThanOrEqual(0.75 * cap);
  });
});
