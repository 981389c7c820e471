import { canReadAsset, type Principal } from '@dam/auth-tokens';
import type { Asset } from './asset';

/** Group first (nothing crosses tenants), then the role's READ_ASSET or *_OWN_* tokens (CONTRACT §2). */
export function canRead(caller: Principal, asset: Pick<Asset, 'groupId' | 'creatorId'>): boolean {
  return asset.groupId === caller.group_id && canReadAsset(caller, asset.creatorId);
}
