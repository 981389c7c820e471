import Uppy, { type Meta, type UppyFile } from '@uppy/core';
import Dashboard from '@uppy/dashboard';
import Tus from '@uppy/tus';
import { customMetadataFor } from './custom-metadata';

/**
 * The file picker: Uppy's Dashboard (drag and drop, several files, a progress bar per file, per-file metadata,
 * keyboard-usable) uploading over tus 1.0.0 to `{upload}/api/v1/uploads/tus` (CONTRACT §12) in chunks, so a
 * dropped connection costs at most one chunk: tus-js-client asks the server for its offset (HEAD) and goes on
 * from there, by itself on `retryDelays` or when the user presses Retry. The console mounts it with the signed-in
 * user's uploadkey; picker.js (./entry.ts) mounts the same thing on other sites' pages.
 */
export interface PickerOptions {
  /** `{upload}`, e.g. http://127.0.0.1:8081 (config.json's `upload`). */
  endpoint: string;
  /** The Login result's `uploadkey` (sent as X-Upload-Key): upload-only, the credential for embedding. */
  uploadkey?: string;
  /** Or a JWT (Authorization: Bearer). */
  token?: string;
  /** Custom data every file gets (what the user types per file is merged over it). */
  data?: Record<string, unknown>;
  /** The asset schema the data is validated against (`data_schema_id`). */
  dataSchemaId?: number;
  /** Bytes per PATCH: what a dropped connection can cost at most (default 8 MiB). */
  chunkSize?: number;
  /** Waits before each automatic retry of a failed request, in ms. */
  retryDelays?: number[];
  /** Largest file accepted, in bytes. */
  maxFileSize?: number;
  height?: number;
  note?: string;
  /** Called with each asset once its last byte is stored (the final PATCH's X-Asset-Id). */
  onUploaded?: (asset: UploadedAsset) => void;
  /** Called when a batch is done, with what succeeded and what failed. */
  onComplete?: (result: { uploaded: UploadedAsset[]; failed: { name: string; error: string }[] }) => void;
}

export interface UploadedAsset {
  id: string;
  name: string;
  size: number;
  type: string;
}

export interface PickerHandle {
  uppy: Uppy<PickerMeta>;
  destroy(): void;
}

export interface PickerMeta extends Meta {
  title?: string;
  description?: string;
  data?: string;
  custom_metadata?: string;
  assetId?: string;
}

export const TUS_PATH = '/api/v1/uploads/tus';
const MiB = 1024 * 1024;

function assetIdOf(response: { body?: unknown } | undefined): string | undefined {
  const xhr = (response?.body as { xhr?: XMLHttpRequest } | undefined)?.xhr;
  const id = xhr?.getResponseHeader('X-Asset-Id');
  return id ?? undefined;
}

export function mountPicker(target: HTMLElement, opts: PickerOptions): PickerHandle {
  const headers: Record<string, string> = {};
  if (opts.uploadkey) headers['X-Upload-Key'] = opts.uploadkey;
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;

  const uppy = new Uppy<PickerMeta>({
    autoProceed: false,
    allowMultipleUploadBatches: true,
    restrictions: opts.maxFileSize ? { maxFileSize: opts.maxFileSize } : {},
    onBeforeUpload(files) {
      const out: Record<string, UppyFile<PickerMeta, Record<string, never>>> = {};
      for (const [id, file] of Object.entries(files)) {
        const custom = customMetadataFor(file.meta, opts.data, opts.dataSchemaId);
        if (!custom.ok) {
          uppy.info(`${file.name ?? 'A file'}: ${custom.error}`, 'error', 8000);
          return false;
        }
        const { custom_metadata: _old, ...meta } = file.meta;
        // Upload-Metadata names only what the file has: a field listed but unset would travel as "undefined".
        out[id] = {
          ...file,
          meta: custom.value === undefined ? meta : { ...meta, custom_metadata: custom.value },
          tus: { ...file.tus, allowedMetaFields: custom.value === undefined ? ['name', 'type'] : ['name', 'type', 'custom_metadata'] },
        };
      }
      return out;
    },
  });

  uppy.use(Dashboard<PickerMeta, Record<string, never>>, {
    inline: true,
    target,
    width: '100%',
    height: opts.height ?? 420,
    proudlyDisplayPoweredByUppy: false,
    showRemoveButtonAfterComplete: true,
    hideProgressAfterFinish: false,
    fileManagerSelectionType: 'files',
    note: opts.note ?? 'Drop files here or browse. Large files resume after a dropped connection.',
    metaFields: [
      { id: 'title', name: 'Title', placeholder: 'Stored as data.title' },
      { id: 'description', name: 'Description', placeholder: 'Stored as data.description' },
      { id: 'data', name: 'More data (JSON)', placeholder: '{"rating": 4}' },
    ],
  });

  uppy.use(Tus<PickerMeta, Record<string, never>>, {
    endpoint: `${opts.endpoint.replace(/\/$/, '')}${TUS_PATH}`,
    headers,
    chunkSize: opts.chunkSize ?? 8 * MiB,
    retryDelays: opts.retryDelays ?? [500, 1000, 3000, 5000, 10000],
    // tus Upload-Metadata: filename and filetype (from name and type), and custom_metadata where a file has it
    // (CONTRACT §12; set per file in onBeforeUpload).
    allowedMetaFields: ['name', 'type'],
    removeFingerprintOnSuccess: true,
    limit: 3,
  });

  // Uppy's Dashboard renders a single file's role="listitem" in a container without role="list" (its list of
  // several files has it): an ARIA error screen readers trip on. Give that container its role.
  const listRoles = new MutationObserver(() => {
    for (const el of target.querySelectorAll('.uppy-Dashboard-files:not([role])')) el.setAttribute('role', 'list');
  });
  listRoles.observe(target, { childList: true, subtree: true });

  const uploaded: UploadedAsset[] = [];
  uppy.on('upload-success', (file, response) => {
    if (!file) return;
    const id = assetIdOf(response);
    if (!id) {
      uppy.info(`${file.name ?? 'A file'} was stored but {upload} did not name its asset (X-Asset-Id)`, 'warning', 8000);
      return;
    }
    uppy.setFileMeta(file.id, { assetId: id });
    const asset = { id, name: file.name ?? id, size: file.size ?? 0, type: file.type };
    uploaded.push(asset);
    opts.onUploaded?.(asset);
  });
  uppy.on('complete', (result) => {
    const failed = (result.failed ?? []).map((f) => ({ name: f.name ?? f.id, error: f.error ?? 'failed' }));
    opts.onComplete?.({ uploaded: uploaded.splice(0), failed });
  });

  return {
    uppy,
    destroy() {
      listRoles.disconnect();
      uppy.destroy();
    },
  };
}
