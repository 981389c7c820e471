import { useState } from 'preact/hooks';
import type { components } from '@dam/client';
import { apiErrors, checkSettingsPatch, errorsUnder, type PathErrors, type Settings, type SettingsPatch } from '../lib/settings-form';
import { api, errorText, type Session } from '../session';

export interface SaveState {
  /** Sends `patch` after the browser's check; true when Update Settings took it. */
  save: (patch: SettingsPatch, done?: string) => Promise<boolean>;
  /** The messages at an API path or below it (the browser's check and the API's 400 use the same paths). */
  at: (path: string) => string | undefined;
  errors: PathErrors;
  general?: string | undefined;
  status?: string | undefined;
  busy: boolean;
  fail: (err: unknown) => void;
}

/**
 * One section's Update Settings: the patch is checked with the API's rules first (lib/settings-form.ts), then sent;
 * a 400's details land by path, so each message is shown next to the field whose path it names.
 */
export function useSettingsSave(session: Session, settings: Settings, onSaved: (s: Settings) => void): SaveState {
  const [errors, setErrors] = useState<PathErrors>({});
  const [general, setGeneral] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [busy, setBusy] = useState(false);
  const save = async (patch: SettingsPatch, done = 'Saved'): Promise<boolean> => {
    setStatus(undefined);
    setGeneral(undefined);
    const checked = checkSettingsPatch(patch, settings);
    setErrors(checked);
    if (Object.keys(checked).length > 0) return false;
    setBusy(true);
    try {
      const { data, error } = await api(session).PATCH('/api/v1/settings', { body: patch as components['schemas']['SettingsPatch'] });
      if (!data) {
        const e = apiErrors(error);
        setErrors(e.byPath);
        setGeneral(e.general);
        return false;
      }
      onSaved(data as unknown as Settings);
      setStatus(done);
      return true;
    } finally {
      setBusy(false);
    }
  };
  return { save, at: (path) => errorsUnder(errors, path), errors, general, status, busy, fail: (err) => setGeneral(errorText(err)) };
}
