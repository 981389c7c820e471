/**
 * Holds every connection recorded during a run of end-to-end tests to the NetworkPolicies of both overlays:
 *   DAM_RECORD_FLOWS=/tmp/flows pnpm exec jest --selectProjects e2e
 *   pnpm exec tsx test/e2e/check-flows.ts /tmp/flows [k8s-dir]
 * Prints each distinct flow (service -> workload) with the suites that made it, then what each overlay blocks; exits 1
 * when any overlay blocks a flow. `external` destinations are addresses no suite named (webhook receivers, ingest
 * sources, stubs of a test): the evaluator places them on the internet.
 */
import path from 'node:path';
import { buildOverlay, describeVerdict } from '../../deploy/k8s/network-policy-eval';
import { decideObserved, observedFlows, recordedSuites, type ObservedFlow } from './flow-recording';

const [root, k8sDir = path.resolve(__dirname, '..', '..', 'k8s')] = process.argv.slice(2);
if (!root) {
  console.error('usage: tsx test/e2e/check-flows.ts <DAM_RECORD_FLOWS directory> [k8s directory]');
  process.exit(2);
}

const suites = recordedSuites(root);
const observed: ObservedFlow[] = suites.flatMap((dir) => observedFlows(dir));
const pairs = new Map<string, number>();
for (const o of observed) pairs.set(`${o.from} -> ${o.to}`, (pairs.get(`${o.from} -> ${o.to}`) ?? 0) + 1);
console.log(`${suites.length} suites, ${observed.length} flows, ${pairs.size} distinct:`);
for (const [pair, n] of [...pairs].sort()) console.log(`  ${pair}  (${n})`);

let blocked = 0;
for (const overlay of ['dev', 'prod']) {
  const objects = buildOverlay(k8sDir, overlay);
  const denied = new Set(
    decideObserved(objects, observed)
      .filter((d) => !d.verdict.admitted)
      .map((d) => describeVerdict({ ...d.flow, to: { ...d.flow.to, name: d.flow.to.kind === 'external' ? 'external' : d.flow.to.name } }, d.verdict)),
  );
  console.log(`${overlay}: ${denied.size === 0 ? 'every flow admitted' : `${denied.size} blocked`}`);
  for (const line of denied) console.log(`  ${line}`);
  blocked += denied.size;
}
process.exit(blocked === 0 ? 0 : 1);
