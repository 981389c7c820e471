import '@uppy/core/css/style.min.css';
import '@uppy/dashboard/css/style.min.css';
import '../picker/picker.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { ConsoleConfig } from '../config';
import { formatBytes } from '../lib/format';
import { mountPicker, type UploadedAsset } from '../picker/picker';
import { Link } from '../router';
import type { Session } from '../session';

/** The picker (../picker/picker.ts) with the signed-in user's uploadkey, and the assets it made. */
export function UploadPage({ session, config }: { session: Session; config: ConsoleConfig }) {
  const host = useRef<HTMLDivElement>(null);
  const [uploaded, setUploaded] = useState<UploadedAsset[]>([]);
  const [failed, setFailed] = useState<{ name: string; error: string }[]>([]);

  useEffect(() => {
    if (!host.current) return;
    const picker = mountPicker(host.current, {
      endpoint: config.upload,
      uploadkey: session.uploadkey,
      height: 460,
      onUploaded: (a) => setUploaded((list) => [...list, a]),
      onComplete: (r) => setFailed(r.failed),
    });
    return () => picker.destroy();
  }, [session.uploadkey, config.upload]);

  return (
    <>
      <h1>Upload</h1>
      <p class="muted">
        Add several files by dropping them or browsing; give each one a title, a description or more data with its Edit button before uploading. Large files go
        up in pieces and pick up where they stopped after a dropped connection.
      </p>
      <div ref={host} class="dam-picker" />
      <section class="uploaded-list" aria-labelledby="uploaded-heading" aria-live="polite">
        <h2 id="uploaded-heading">Uploaded in this visit</h2>
        {uploaded.length === 0 ? (
          <p class="muted">Nothing yet.</p>
        ) : (
          <ul>
            {uploaded.map((a) => (
              <li key={a.id} data-uploaded-asset={a.id}>
                <Link href={`/assets/${a.id}`}>{a.name}</Link> <span class="muted">({formatBytes(a.size)})</span>
              </li>
            ))}
          </ul>
        )}
        {failed.length > 0 && (
          <p class="notice error" role="alert">
            Not uploaded: {failed.map((f) => `${f.name} (${f.error})`).join(', ')}. Use Retry in the picker.
          </p>
        )}
      </section>
    </>
  );
}
