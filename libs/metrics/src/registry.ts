import { collectDefaultMetrics, Registry } from 'prom-client';

let registry: Registry | undefined;
let currentService: string | undefined;

/**
 * The one registry of this process, created on first use with the default process metrics (CPU, memory,
 * event loop lag, GC, handles). Every metric of the service lives here, so one `/metrics` shows them all.
 */
export function metricsRegistry(): Registry {
  if (!registry) {
    registry = new Registry();
    collectDefaultMetrics({ register: registry });
  }
  return registry;
}

/**
 * Sets the `service` label every series carries. Default labels are applied when the registry is read, so
 * metrics created before the call get it too; the first name set wins (one service per process).
 */
export function setMetricsService(service: string): void {
  const reg = metricsRegistry();
  if (currentService !== undefined) return;
  currentService = service;
  reg.setDefaultLabels({ service });
}

export function metricsService(): string | undefined {
  return currentService;
}

/** The registry's text exposition (Prometheus text format 0.0.4) and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  const reg = metricsRegistry();
  return { contentType: reg.contentType, body: await reg.metrics() };
}
