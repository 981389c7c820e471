import { randomUUID } from 'node:crypto';
import type { PoolClient } from '@dam/db';
import {
  assetEventSubject,
  assetPurgeSubject,
  collectionMembershipSubject,
  collectionStateSubject,
  dataSchemaSubject,
  type AssetEventType,
  type DeletionPayload,
} from '@dam/events';
import { writeOutbox } from '@dam/outbox';
import { addonTermsOf, toAssetData, type Asset } from '../domain/asset';
import type { AssetSchema } from '../domain/asset-schema';
import type { Collection } from '../domain/collection';
import type { AssetEventWriter, RemovedObject } from '../domain/ports';
import { holdDeletionEvent } from './object-deletion.repository';

/** Asset (and schema) events go out only through the outbox, in the transaction that made the change (never lost, never invented). */
export class OutboxAssetEventWriter implements AssetEventWriter {
  constructor(private readonly client: Pick<PoolClient, 'query'>) {}

  async writeDeletion(asset: Asset, payload: DeletionPayload, removing: readonly RemovedObject[] = []): Promise<void> {
    if (payload.event !== 'file-deleted') return this.writeEnvelope(payload.event, asset, payload);
    // A Delete of keys leaves the asset live: the event carries it as it now is, so search drops what went.
    const entry = this.envelope('file-deleted', asset, payload, asset.deletedAt ? {} : { asset: toAssetData(asset), ...this.searchExtras(asset) });
    if (await holdDeletionEvent(this.client, asset.groupId, asset.id, entry, removing)) return;
    await writeOutbox(this.client, entry);
  }

  async write(type: 'file-saved' | 'file-processed' | 'file-data-updated' | 'addon-processed', asset: Asset): Promise<void> {
    // The schema travels beside the asset data (the spec's payload has no member for it): search indexes the
    // schema's searchable fields.
    await this.writeEnvelope(type, asset, toAssetData(asset), this.searchExtras(asset));
  }

  private searchExtras(asset: Asset): { data_schema_id: number; addon_terms?: { labels: string[]; words: string[] } } {
    const terms = addonTermsOf(asset);
    return { data_schema_id: asset.dataSchemaId, ...(terms ? { addon_terms: terms } : {}) };
  }

  /** A schema as saved, on `dam.schemas.<group>.<id>` (the search read model indexes its searchable fields). */
  async writeSchemaSaved(s: AssetSchema): Promise<void> {
    const id = `schema-${s.groupId}-${s.id}-${s.updatedAt.getTime()}`;
    await writeOutbox(this.client, {
      id,
      subject: dataSchemaSubject(s.groupId, s.id),
      payload: { id, group_id: s.groupId, schema_id: s.id, service_properties: s.serviceProperties, updated_at: s.updatedAt.toISOString() },
    });
  }

  async writeMembership(groupId: number, assetId: string, collectionIds: string[], version: number): Promise<void> {
    const id = `membership-${assetId}-${version}`;
    await writeOutbox(this.client, {
      id,
      subject: collectionMembershipSubject(groupId, assetId),
      payload: { id, group_id: groupId, asset_id: assetId, collection_ids: collectionIds, version },
    });
  }

  async writeCollectionState(c: Collection, deleted: boolean): Promise<void> {
    const id = `collection-${c.id}-${randomUUID()}`;
    await writeOutbox(this.client, {
      id,
      subject: collectionStateSubject(c.groupId, c.id),
      payload: { id, group_id: c.groupId, collection_id: c.id, owner_id: c.ownerId, shared: c.shared, deleted },
    });
  }

  async writePurge(groupId: number, assets: Array<{ id: string; version: number }>): Promise<void> {
    const id = `purge-${randomUUID()}`;
    await writeOutbox(this.client, { id, subject: assetPurgeSubject(groupId), payload: { id, group_id: groupId, assets } });
  }

  private async writeEnvelope(type: AssetEventType, asset: Asset, data: unknown, extra: Record<string, unknown> = {}): Promise<void> {
    await writeOutbox(this.client, this.envelope(type, asset, data, extra));
  }

  private envelope<D>(type: AssetEventType, asset: Asset, data: D, extra: Record<string, unknown> = {}) {
    const id = randomUUID();
    return {
      id,
      subject: assetEventSubject(asset.groupId, type),
      payload: { id, type, time: new Date().toISOString(), group_id: String(asset.groupId), asset_id: asset.id, version: asset.version, ...extra, data },
    };
  }
}
