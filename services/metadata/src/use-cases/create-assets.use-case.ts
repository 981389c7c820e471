import { validationFailed } from '@dam/errors';
import { resolveData, validateCustomMetadata } from '../domain/custom-metadata';
import { isOwnOriginalKey } from '../domain/object-keys';
import { originalKey } from '@dam/storage';
import { toAssetData, type Asset } from '../domain/asset';
import { NO_AUTO_ADDONS, startProcessing, type AutoAddons, type AutoAddonsOf } from '../domain/processing';
import type { Principal } from '@dam/auth-tokens';
import type { RunInTransaction } from '../domain/ports';
import type { AssetData } from '@dam/events';
import type { StoredFile } from '@dam/internal-api';

/** An original upload stored, as it registers it (the internal API's schema, which the route checks). */
export type { StoredFile };

export interface CreateAssetsCommand {
  files: StoredFile[];
  /** Raw `custom_metadata` as the client sent it: validated here so upload and metadata agree on the rules. */
  customMetadata?: unknown;
}

/**
 * Registers originals that upload already stored. All assets, and their events, are written in one transaction:
 * either every file of the request becomes an asset or none does. Each one's processing and automatic addons
 * (`autoAddonsOf`, asked before the transaction) are opened with it.
 */
export async function createAssets(
  runInTransaction: RunInTransaction,
  caller: Principal,
  command: CreateAssetsCommand,
  autoAddonsOf?: AutoAddonsOf,
): Promise<AssetData[]> {
  const foreign = command.files.filter((f) => !isOwnOriginalKey(caller.group_id, f.id, f.object_key));
  if (foreign.length > 0) {
    throw validationFailed(
      foreign.map((f) => ({ path: `files.${command.files.indexOf(f)}.object_key`, message: `must be ${originalKey(String(caller.group_id), f.id)}` })),
      'An object key is not the original key of its asset',
    );
  }
  const custom = command.customMetadata === undefined ? undefined : validateCustomMetadata(command.customMetadata, 'custom_metadata');
  const auto = new Map<string, AutoAddons>();
  for (const type of new Set(command.files.map((f) => f.content_type))) {
    auto.set(type, autoAddonsOf ? await autoAddonsOf(caller.group_id, type) : NO_AUTO_ADDONS);
  }
  const created = await runInTransaction(async (tx) => {
    // Same rules as Update Data: the schema exists, the result fits, and it matches the schema.
    const { data, dataSchemaId } = custom
      ? await resolveData(tx, caller.group_id, { data: {}, dataSchemaId: 0 }, custom, 'custom_metadata')
      : { data: {}, dataSchemaId: 0 };
    const out: Asset[] = [];
    for (const file of command.files) {
      const asset = await tx.assets.insert({
        id: file.id,
        groupId: caller.group_id,
        creatorId: caller.user_id,
        name: file.name,
        size: file.size,
        checksum: file.checksum,
        contentType: file.content_type,
        status: 'NOT_READY',
        metadata: file.metadata,
        data,
        dataSchemaId,
        objectKey: file.object_key,
      });
      await tx.events.write('file-saved', asset);
      // Its processing and addon jobs and their commands commit with it (or OK at once if nothing is needed).
      out.push(await startProcessing(tx, asset, caller.user_id, auto.get(file.content_type)));
    }
    return out;
  });
  return created.map(toAssetData);
}
