import { AppError, notFound } from '@dam/errors';

// 404 for assets of other groups or not readable by the caller too: never leak ids through 403 (CONTRACT §1).
export const assetNotFound = (): AppError => notFound('ASSET_NOT_FOUND', 'The asset does not exist');
export const assetInTrash = (): AppError => notFound('ASSET_IN_TRASH', 'The asset is in the trash');
export const conversionNotFound = (key: string): AppError => notFound('CONVERSION_NOT_FOUND', `The asset has no conversion "${key}"`);
