/**
 * The connections the production form really made (issue 31, "prove the NetworkPolicies against real traffic"):
 * every container records each destination it opens (deploy/local/record-flows.mjs, preloaded; DAM_PF_DIR/flows),
 * and nginx logs each upstream it opened (DAM_PF_DIR/nginx/upstreams.log): the ingress controller's connections.
 * Named by the addresses the run gave each workload (DAM_PF_DIR/workloads.json).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workloadAt, type Listeners } from '../../deploy/production-form/form';
import { INGRESS, type ObservedFlow } from '../e2e/flow-recording';

export function formFlows(dir: string): ObservedFlow[] {
  const listeners = JSON.parse(readFileSync(path.join(dir, 'workloads.json'), 'utf8')) as Listeners;
  const flows = new Map<string, ObservedFlow>();
  const add = (from: string, address: string, port: number) => {
    const flow = { from, to: workloadAt(listeners, address, port) ?? 'external', address, port };
    flows.set(JSON.stringify(flow), flow);
  };
  const flowDir = path.join(dir, 'flows');
  for (const file of existsSync(flowDir) ? readdirSync(flowDir).filter((f) => f.endsWith('.jsonl')) : []) {
    for (const line of readFileSync(path.join(flowDir, file), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const r = JSON.parse(line) as { service: string; address?: string; port?: number; path?: string };
      if (r.path !== undefined || r.address === undefined || r.port === undefined) continue;
      // An init container runs in its workload's pod: the pod's policies apply to it.
      add(r.service.replace(/^migrate-/, ''), r.address, r.port);
    }
  }
  const upstreams = path.join(dir, 'nginx', 'upstreams.log');
  for (const line of existsSync(upstreams) ? readFileSync(upstreams, 'utf8').split('\n') : []) {
    // `$upstream_addr`: "-" without an upstream, several addresses after a retry.
    for (const hop of line
      .split(/[,:]\s+|,\s*/)
      .map((x) => x.trim())
      .filter((x) => /^\d+\.\d+\.\d+\.\d+:\d+$/.test(x))) {
      const [address, port] = hop.split(':') as [string, string];
      add(INGRESS, address, Number(port));
    }
  }
  return [...flows.values()].sort((a, b) => `${a.from} ${a.to}`.localeCompare(`${b.from} ${b.to}`));
}
