/**
 * The console's pages in the top navigation, and who may use each (CONTRACT §2: the permission tokens of the
 * signed-in role, as Login gave them). A page the role may not use is not offered: the navigation leaves it out,
 * and its address shows a page saying so (app.tsx), never a page whose every call answers 403.
 */
export type PageName = 'browser' | 'upload' | 'collections' | 'jobs' | 'trash' | 'users' | 'api-keys' | 'settings' | 'schemas' | 'usage' | 'webhooks';

export interface NavPage {
  name: PageName;
  href: string;
  /** The link's text, and the page's h1. */
  label: string;
  /** Any one of these tokens admits the role (none: every signed-in user). */
  anyOf: readonly string[];
  /** Said on the not-permitted page. */
  what: string;
}

/** In the order the navigation shows them. */
export const PAGES: readonly NavPage[] = [
  { name: 'browser', href: '/', label: 'Assets', anyOf: [], what: 'browsing the assets' },
  { name: 'upload', href: '/upload', label: 'Upload', anyOf: ['CREATE_ASSET'], what: 'uploading' },
  { name: 'collections', href: '/collections', label: 'Collections', anyOf: [], what: 'the collections' },
  { name: 'jobs', href: '/jobs', label: 'Jobs', anyOf: [], what: 'the jobs' },
  // Search of the trash, Undelete of what others deleted and Purge are the administrator's (PURGE_TRASH).
  { name: 'trash', href: '/trash', label: 'Trash', anyOf: ['PURGE_TRASH'], what: 'the trash' },
  { name: 'users', href: '/users', label: 'Users', anyOf: ['MANAGE_USERS'], what: 'managing users' },
  // Every user has an upload key and an accessID to rotate; the group's API keys need MANAGE_USERS (the page's part).
  { name: 'api-keys', href: '/api-keys', label: 'API keys', anyOf: [], what: 'keys' },
  { name: 'settings', href: '/settings', label: 'Settings', anyOf: ['MANAGE_SETTINGS'], what: 'the settings' },
  { name: 'schemas', href: '/schemas', label: 'Schemas', anyOf: ['MANAGE_SCHEMAS'], what: 'managing schemas' },
  { name: 'usage', href: '/usage', label: 'Usage', anyOf: ['VIEW_USAGE'], what: 'the usage statistics' },
  { name: 'webhooks', href: '/webhooks', label: 'Webhooks', anyOf: ['MANAGE_SETTINGS'], what: 'the webhook log' },
];

const byName = new Map<string, NavPage>(PAGES.map((p) => [p.name, p]));

export const pageOf = (name: string): NavPage | undefined => byName.get(name);

/** Whether a role with these tokens may use the page named (a route that is no page of the navigation: yes). */
export function mayUse(name: string, permissions: readonly string[]): boolean {
  const page = byName.get(name);
  return !page || page.anyOf.length === 0 || page.anyOf.some((t) => permissions.includes(t));
}

/** The navigation of a role. */
export const navFor = (permissions: readonly string[]): NavPage[] => PAGES.filter((p) => mayUse(p.name, permissions));
