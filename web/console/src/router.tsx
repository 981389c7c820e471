import type { ComponentChildren, JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/**
 * The console's routes are paths below /console/ (the gateway answers index.html for each of them), read from
 * and written to the History API: a link is an ordinary <a href>, so opening it in a new tab works too.
 */
export const BASE = '/console';

export type Route =
  | { name: 'browser'; query: URLSearchParams }
  | { name: 'asset'; id: string }
  | { name: 'upload' }
  | { name: 'jobs' }
  | { name: 'trash' }
  | { name: 'users' }
  | { name: 'collections' }
  | { name: 'collection'; id: string }
  | { name: 'api-keys' }
  | { name: 'settings' }
  | { name: 'schemas' }
  | { name: 'usage' }
  | { name: 'webhooks' }
  | { name: 'login' }
  | { name: 'not-found' };

/** The routes that are one path segment, named as their segment. */
const SINGLE = ['upload', 'collections', 'jobs', 'trash', 'users', 'api-keys', 'settings', 'schemas', 'usage', 'webhooks', 'login'] as const;

export function parseRoute(pathname: string, search: string): Route {
  const rel = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname;
  const parts = rel.split('/').filter(Boolean);
  if (parts.length === 0) return { name: 'browser', query: new URLSearchParams(search) };
  if (parts[0] === 'assets' && parts.length === 2 && parts[1]) return { name: 'asset', id: decodeURIComponent(parts[1]) };
  if (parts[0] === 'collections' && parts.length === 2 && parts[1]) return { name: 'collection', id: decodeURIComponent(parts[1]) };
  if (parts.length === 1 && (SINGLE as readonly string[]).includes(parts[0] ?? '')) return { name: parts[0] as (typeof SINGLE)[number] };
  return { name: 'not-found' };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((l) => l()));

export function navigate(path: string, replace = false): void {
  const url = path.startsWith(BASE) ? path : `${BASE}${path}`;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  listeners.forEach((l) => l());
}

export function useRoute(): Route {
  const read = () => parseRoute(window.location.pathname, window.location.search);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const l = () => setRoute(read());
    listeners.add(l);
    return () => {
      listeners.delete(l);
    };
  }, []);
  return route;
}

/** An in-app link: a real href, handled without a page load unless a modifier key asks for a new tab. */
export function Link(props: { href: string; children: ComponentChildren } & Omit<JSX.HTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const { href, children, ...rest } = props;
  const url = href.startsWith(BASE) ? href : `${BASE}${href}`;
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(url);
  };
  return (
    <a {...rest} href={url} onClick={onClick}>
      {children}
    </a>
  );
}
