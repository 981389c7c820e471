import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Principal } from '@dam/auth-tokens';
import { badRequest, unavailable } from '@dam/errors';
import { receiveMultipart } from '@dam/http';
import { replacementKey, storeOriginal } from '@dam/storage';
import type { PendingHandle } from '../domain/ports';
import { noFile, RegistrationUnknown, requestBudget } from '../domain/upload.errors';
import { parseCustomMetadata, type UploadDeps, type UploadResult } from './upload-assets.use-case';

/** Journal id of a replacement: the asset id and the object's token (the asset itself already exists). */
export const replacementJournalId = (assetId: string, token: string): string => `${assetId}-${token}`;

/**
 * Endpoint 4: the new original streams to a key of its own next to the live one (MD5, size, sniffed type on the
 * fly), then metadata switches the asset to it in one transaction. The permission and the asset are checked
 * before the body is read. On a failure the new object is removed (when metadata's answer was lost, the reaper
 * decides); if this process dies first, the orphan reaper removes it (its journal entry names the key, which
 * metadata then does not know as live).
 */
export async function replaceAsset(deps: UploadDeps, principal: Principal, assetId: string, req: IncomingMessage): Promise<UploadResult> {
  await deps.metadata.checkReplaceable(principal, assetId);
  const token = randomBytes(8).toString('hex');
  const key = replacementKey(String(principal.group_id), assetId, token);
  const budget = requestBudget(deps.maxUploadBytes);
  let customMetadata: unknown;
  let handle: PendingHandle | undefined;
  let files = 0;
  try {
    const { results } = await receiveMultipart(req, {
      ...(deps.idleTimeoutMs ? { idleTimeoutMs: deps.idleTimeoutMs } : {}),
      onField(name, value) {
        if (name === 'custom_metadata') customMetadata = parseCustomMetadata(value);
      },
      async onFile(part) {
        part.stream.on('error', () => undefined);
        if (++files > 1) {
          part.stream.resume();
          throw badRequest('TOO_MANY_FILES', 'Replace takes exactly one file');
        }
        const { group_id, user_id, role_id, role_name } = principal;
        handle = await deps.journal
          .open(replacementJournalId(assetId, token), { object_key: key, group_id, user_id, role_id, role_name, started_at: new Date().toISOString() })
          .catch((error: unknown) => {
            deps.logger.error({ err: error }, 'could not record a pending upload');
            throw unavailable('The upload journal is unavailable', 'UPLOAD_JOURNAL_UNAVAILABLE');
          });
        const original = await storeOriginal(deps.storage, key, part.stream, budget);
        const metadata = { ...original.metadata, ...(await deps.describeStored?.(key, original.contentType)) };
        return { name: part.name, size: original.size, checksum: original.checksum, content_type: original.contentType, object_key: key, metadata };
      },
    });
    const file = results[0];
    if (!file) throw noFile();
    const asset = await deps.metadata.replaceOriginal(principal, assetId, file, customMetadata);
    await handle?.close();
    return {
      files: [
        {
          id: asset.id,
          name: file.name,
          size: file.size,
          checksum: file.checksum,
          content_type: file.content_type,
          metadata: file.metadata,
          status: 'NOT_READY',
        },
      ],
      success: true,
      provider: 'local',
    };
  } catch (error) {
    if (handle && error instanceof RegistrationUnknown) {
      // metadata may have switched the asset to the new object: the reaper keeps it if it is the live original.
      deps.logger.warn({ object_key: key }, 'metadata may have registered the replace: its object is left to the orphan reaper');
      handle.abandon();
    } else if (handle) {
      await deps.storage.remove(key).then(
        () => handle?.close(),
        (removeError: unknown) => {
          deps.logger.error({ err: removeError, object_key: key }, 'could not remove the object of a failed replace');
          handle?.abandon();
        },
      );
    }
    throw error;
  }
}
