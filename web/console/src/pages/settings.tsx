import { useEffect, useState } from 'preact/hooks';
import { ConversionsSection } from '../components/settings-conversions';
import { AddonsSection, LimitsSection, ProfileSection, WatermarkSection, WebhooksSection } from '../components/settings-sections';
import type { Settings } from '../lib/settings-form';
import { api, errorText, type Session } from '../session';
import '../components/settings.css';
import { ErrorNotice } from '../components/status';

/**
 * The group's settings (MANAGE_SETTINGS; CONTRACT §4, services/auth settings): each section is its own form and
 * sends only its part with Update Settings, checked first in the browser with the API's rules
 * (lib/settings-form.ts); the answer is the whole record, which every section then shows.
 */
export function SettingsPage({ session }: { session: Session }) {
  const [settings, setSettings] = useState<Settings>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    api(session)
      .GET('/api/v1/settings')
      .then(({ data, error: e }) => (data ? setSettings(data as unknown as Settings) : setError(errorText(e))))
      .catch((err: unknown) => setError(errorText(err)));
  }, [session]);
  const props = settings && { session, settings, onSaved: setSettings };
  return (
    <div class="settings">
      <h1>Settings</h1>
      <ErrorNotice text={error} />
      {!props && !error && <p role="status">Loading…</p>}
      {props && (
        <>
          <ConversionsSection {...props} />
          <ProfileSection {...props} />
          <WatermarkSection {...props} />
          <AddonsSection {...props} />
          <WebhooksSection {...props} />
          <LimitsSection {...props} />
        </>
      )}
    </div>
  );
}
