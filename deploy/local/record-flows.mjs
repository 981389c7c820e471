// The flow recorder: preloaded into a service process (`node --import <this file>`, e.g. through NODE_OPTIONS) when
// DAM_RECORD_FLOWS names a directory, it appends one JSON line per distinct destination the process opens a TCP
// connection to (pg, nats, the S3 client, fetch and node:http all go through net.Socket#connect, which publishes
// `net.client.socket`) to <dir>/<service>.jsonl. deploy/k8s/network-policy-eval.ts then asks whether the rendered
// NetworkPolicies admit what was seen (test/e2e/network-flows.e2e.test.ts).
// env: DAM_RECORD_FLOWS (the directory; nothing is done without it)
//      DAM_FLOW_SERVICE (the service's name; by default from the entry path services/<name>/ or `run-service <name>`)
// Plain JavaScript and no dependency: it must load before any loader (tsx) and in the images' compiled code alike.
import { appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { subscribe } from 'node:diagnostics_channel';

const dir = process.env.DAM_RECORD_FLOWS;

/** The service this process runs, as the suite and the images start it. */
function serviceName() {
  if (process.env.DAM_FLOW_SERVICE) return process.env.DAM_FLOW_SERVICE;
  const args = process.argv.slice(1);
  for (const arg of args) {
    const m = /[\\/]services[\\/]([a-z0-9-]+)[\\/]/.exec(arg);
    if (m) return m[1];
  }
  const run = args.findIndex((a) => /run-service(\.[cm]?[jt]s)?$/.test(a));
  if (run >= 0 && args[run + 1]) return args[run + 1] === 'migrate' ? `migrate-${args[run + 2] ?? 'unknown'}` : args[run + 1];
  return `pid-${process.pid}`;
}

if (dir) {
  const service = serviceName();
  const file = path.join(dir, `${service}.jsonl`);
  const seen = new Set();
  mkdirSync(dir, { recursive: true });
  const record = (flow) => {
    const key = flow.path ?? `${flow.address}|${flow.port}`;
    if (seen.has(key)) return;
    seen.add(key);
    try {
      // Synchronous and small: it happens once per destination, and a line must not be lost when the process is killed.
      appendFileSync(file, `${JSON.stringify({ service, pid: process.pid, ...flow, at: new Date().toISOString() })}\n`);
    } catch {
      // Recording must never break the service it watches.
    }
  };
  subscribe('net.client.socket', ({ socket }) => {
    // The attempt is what a NetworkPolicy decides on: record it even when the connection then fails. Each address
    // tried (happy eyeballs tries several) is an attempt of its own; a Unix socket's attempt names its path.
    socket.on('connectionAttempt', (address, port) => record(port === undefined ? { path: address } : { address, port }));
    // Runtimes that do not announce attempts: the connection made.
    socket.once('connect', () => {
      if (socket.remotePort !== undefined) record({ address: socket.remoteAddress, port: socket.remotePort });
    });
  });
}
