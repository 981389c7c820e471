/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are read as plain JSON here */
/**
 * Security review F9 (issue 30): the webhook's autoscaler also sees deliveries waiting in its database. It scaled on
 * the ASSET_EVENTS lag only, which stays at zero while slow or silent receivers hold every delivery slot.
 */
import { parseAllDocuments } from 'yaml';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { renderBase } from '../k8s/generate';
import { DUE_DELIVERIES_PER_REPLICA, DUE_DELIVERIES_SQL } from '../../services/webhook/src/adapters/autoscaling';

const objects = (): any[] =>
  parseAllDocuments(renderBase()['webhook.yaml'] ?? '')
    .map((d) => d.toJSON())
    .filter(Boolean);

describe("the webhook's KEDA ScaledObject", () => {
  it("scales on the due deliveries in the webhook's database as well as on the ASSET_EVENTS lag", () => {
    const scaler = objects().find((o) => o.kind === 'ScaledObject');
    expect(() => new ScaledObject(scaler).validate()).not.toThrow();
    expect(scaler.spec.triggers.map((t: any) => t.type)).toEqual(['nats-jetstream', 'postgresql']);
    expect(scaler.spec.triggers[1].metadata).toEqual({
      connectionFromEnv: 'DATABASE_URL',
      query: DUE_DELIVERIES_SQL,
      targetQueryValue: String(DUE_DELIVERIES_PER_REPLICA),
    });
  });

  it('connects with a DATABASE_URL the scaled container itself gets from its Secret (KEDA reads the first container)', () => {
    const deployment = objects().find((o) => o.kind === 'Deployment');
    const [container] = deployment.spec.template.spec.containers;
    expect(container.name).toBe('webhook');
    expect(container.env.find((e: any) => e.name === 'DATABASE_URL')).toEqual({
      name: 'DATABASE_URL',
      valueFrom: { secretKeyRef: { name: 'dam-webhook', key: 'DATABASE_URL' } },
    });
  });
});
