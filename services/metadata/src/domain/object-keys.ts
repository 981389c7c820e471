import { conversionsPrefix } from '@dam/storage';

/**
 * Defence in depth (ARCHITECTURE rule 9): an object key arriving in a request or a message is only accepted
 * when it lies under the asset's own prefix. Whoever sends it, a key naming another asset's or another group's
 * object would make that object readable through this asset. Originals: `isOwnOriginalKey` of @dam/storage
 * (the workers check the keys of their commands with it too).
 */
export { isOwnOriginalKey } from '@dam/storage';

/**
 * `conversions/<group>/<asset>/<checksum>/<name>[/<name>...]` under the prefix of this version of the original
 * (multi-file outputs keep their files in a folder). No segment starts with a dot, so none is `..`.
 */
export function isOwnConversionKey(groupId: number, assetId: string, checksum: string, key: string): boolean {
  const prefix = ownPrefix(() => conversionsPrefix(String(groupId), assetId, checksum));
  if (prefix === undefined || !key.startsWith(prefix)) return false;
  const rest = key.slice(prefix.length);
  return rest.length <= 512 && rest.split('/').every((segment) => /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(segment));
}

/** The key builders refuse ids that could not be one path segment: such an id owns no key at all. */
function ownPrefix(build: () => string): string | undefined {
  try {
    return build();
  } catch {
    return undefined;
  }
}
