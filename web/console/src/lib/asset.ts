import type { components } from '@dam/client';
import type { ConversionInfo } from './conversions';

/** Get Data's asset (docs/openapi.yaml AssetData), as the console reads it; search results when `extended`. */
export type AssetData = components['schemas']['AssetData'];

export const conversionsOf = (a: { conversions?: unknown }): Record<string, ConversionInfo> =>
  (a.conversions && typeof a.conversions === 'object' ? a.conversions : {}) as Record<string, ConversionInfo>;

/** A short label of the kind of file for a card without a picture: "PDF", "MP4", "FILE". */
export function kindLabel(contentType: string, name: string): string {
  const ext = /\.([A-Za-z0-9]{1,5})$/.exec(name)?.[1];
  if (ext) return ext.toUpperCase();
  const sub = contentType.split('/')[1];
  return sub ? sub.toUpperCase().slice(0, 6) : 'FILE';
}
