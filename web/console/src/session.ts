import { useEffect, useState } from 'preact/hooks';
import { createDamClient, type DamClient } from '@dam/client';

/**
 * Who is signed in: the Login result's JWT (every call to `{base}`) and uploadkey (the picker's uploads to
 * `{upload}`), kept in sessionStorage so a reload keeps the tab signed in and closing it signs out.
 */
export interface Session {
  jwt: string;
  uploadkey: string;
  userId: number;
  email: string;
  username: string;
  roleName: string;
  permissions: string[];
}

const KEY = 'dam-console-session';
type Listener = (s: Session | undefined) => void;
const listeners = new Set<Listener>();

function read(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : undefined;
  } catch {
    return undefined;
  }
}

let current: Session | undefined = read();

export function getSession(): Session | undefined {
  return current;
}

export function setSession(s: Session | undefined): void {
  current = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  for (const l of listeners) l(s);
}

export function useSession(): Session | undefined {
  const [s, set] = useState(current);
  useEffect(() => {
    listeners.add(set);
    return () => {
      listeners.delete(set);
    };
  }, []);
  return s;
}

export const can = (s: Session | undefined, ...tokens: string[]): boolean => !!s && tokens.some((t) => s.permissions.includes(t));

/** The typed client of `{base}` (same origin) for the session; a 401 signs the tab out. */
export function api(s: Session | undefined = current): DamClient {
  const client = createDamClient({ baseUrl: window.location.origin, ...(s ? { token: s.jwt } : {}) });
  client.use({
    onResponse({ response }) {
      if (response.status === 401 && s && current?.jwt === s.jwt) setSession(undefined);
      return response;
    },
  });
  return client;
}

/** The message of a contract error body (`{error: {code, message, details}}`), whatever a call returned. */
export function errorText(error: unknown, fallback = 'The request failed'): string {
  if (typeof error === 'object' && error !== null && 'error' in error) {
    const e = (error as { error?: { message?: unknown; code?: unknown } }).error;
    if (e && typeof e.message === 'string') return typeof e.code === 'string' ? `${e.message} (${e.code})` : e.message;
  }
  if (error instanceof Error) return error.message;
  return fallback;
}
