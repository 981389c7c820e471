/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * The overlays as `kubectl kustomize` renders them, and the few readings of Kubernetes' own rules the k8s tests need
 * (quantities, label selectors, which pods a NetworkPolicy admits). Written apart from deploy/k8s/generate.ts, so
 * a mistake there is not repeated here.
 */
import path from 'node:path';
import { buildOverlay } from '../k8s/network-policy-eval';

export const ROOT = path.resolve(__dirname, '..', '..');
export const OVERLAYS = ['dev', 'prod'] as const;
export type Overlay = (typeof OVERLAYS)[number];

export const build = (overlay: Overlay): any[] => buildOverlay(path.join(ROOT, 'k8s'), overlay);

/** Deployments and StatefulSets: the long-running pods. */
export const podsOf = (objects: any[]): any[] => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');
/** Also the Jobs. */
export const workloadsOf = (objects: any[]): any[] => [...podsOf(objects), ...objects.filter((o) => o.kind === 'Job')];
export const initContainersOf = (o: any): any[] => o.spec.template.spec.initContainers ?? [];
export const containersOf = (o: any): any[] => [...initContainersOf(o), ...o.spec.template.spec.containers];
export const podLabels = (o: any): Record<string, string> => o.spec.template.metadata.labels ?? {};

const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 };
const DECIMAL: Record<string, number> = { '': 1, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };
/** A Kubernetes quantity (`256Mi`, `1Ti`, `500M`, `1073741824`) in bytes. */
export function quantity(q: string | number | undefined): number {
  if (q === undefined) return NaN;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$/.exec(String(q));
  if (!m) throw new Error(`not a quantity: ${q}`);
  const unit = m[2] ?? '';
  return Number(m[1]) * ((BINARY[unit] ?? DECIMAL[unit]) as number);
}
export const MiB = 2 ** 20;

/** Whether a label selector (matchLabels and matchExpressions) selects these labels. */
export function selects(selector: any, labels: Record<string, string>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = e.key in labels;
    const ok =
      e.operator === 'In'
        ? has && e.values.includes(labels[e.key])
        : e.operator === 'NotIn'
          ? !has || !e.values.includes(labels[e.key])
          : e.operator === 'Exists'
            ? has
            : e.operator === 'DoesNotExist'
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

/** The emptyDirs of a pod template: volume name → size limit in bytes (Infinity without a limit). */
export function emptyDirsOf(o: any): Map<string, number> {
  return new Map(
    (o.spec.template.spec.volumes ?? [])
      .filter((v: any) => v.emptyDir)
      .map((v: any) => [v.name, v.emptyDir.sizeLimit ? quantity(v.emptyDir.sizeLimit) : Infinity]),
  );
}

/**
 * Whether the namespace's NetworkPolicies let pods with `from` labels (same namespace) open `port` on the pods of
 * `target`: some policy selecting the target has an ingress rule with a podSelector peer (no namespaceSelector)
 * that selects the client, and the port (number, or the container port's name) among its ports, or no ports.
 */
export function admits(objects: any[], target: any, from: Record<string, string>, port: number): boolean {
  const names = new Set(
    target.spec.template.spec.containers.flatMap((c: any) => (c.ports ?? []).filter((p: any) => p.containerPort === port).map((p: any) => p.name)),
  );
  return objects
    .filter((p) => p.kind === 'NetworkPolicy' && selects(p.spec.podSelector, podLabels(target)))
    .some((p) =>
      (p.spec.ingress ?? []).some(
        (rule: any) =>
          (rule.from ?? []).some((peer: any) => peer.podSelector && !peer.namespaceSelector && selects(peer.podSelector, from)) &&
          (!rule.ports || rule.ports.some((rp: any) => rp.port === port || names.has(rp.port))),
      ),
    );
}
