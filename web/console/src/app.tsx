import { useEffect, useRef } from 'preact/hooks';
import type { ConsoleConfig } from './config';
import { mayUse, navFor, pageOf } from './lib/nav';
import { ApiKeysPage } from './pages/api-keys';
import { AssetPage } from './pages/asset';
import { BrowserPage } from './pages/browser';
import { CollectionPage } from './pages/collection';
import { CollectionsPage } from './pages/collections';
import { JobsPage } from './pages/jobs';
import { LoginPage } from './pages/login';
import { SchemasPage } from './pages/schemas';
import { SettingsPage } from './pages/settings';
import { TrashPage } from './pages/trash';
import { UploadPage } from './pages/upload';
import { UsagePage } from './pages/usage';
import { UsersPage } from './pages/users';
import { WebhooksPage } from './pages/webhooks';
import { Link, navigate, useRoute, type Route } from './router';
import { setSession, useSession, type Session } from './session';

const TITLES: Record<Route['name'], string> = {
  browser: 'Assets',
  asset: 'Asset',
  upload: 'Upload',
  jobs: 'Jobs',
  trash: 'Trash',
  users: 'Users',
  'api-keys': 'API keys',
  settings: 'Settings',
  schemas: 'Schemas',
  usage: 'Usage',
  webhooks: 'Webhooks',
  collections: 'Collections',
  collection: 'Collection',
  login: 'Sign in',
  'not-found': 'Not found',
};

/** The pages the signed-in role may use (lib/nav.ts: the list, in order, with the permission each needs). */
function Nav({ route, session }: { route: Route; session: Session }) {
  return (
    <nav aria-label="Main">
      <ul>
        {navFor(session.permissions).map((i) => (
          <li key={i.href}>
            <Link href={i.href} aria-current={route.name === i.name ? 'page' : undefined}>
              {i.label}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** A page the role may not use, at its address: said plainly, with the way back (never a page of 403s). */
function NotPermitted({ name, session }: { name: string; session: Session }) {
  const page = pageOf(name);
  return (
    <>
      <h1>Not permitted</h1>
      <p class="notice error" role="alert">
        {page?.label ?? 'This page'} is not available to your role ({session.roleName}): {page?.what ?? 'it'} needs the {page?.anyOf.join(' or ')} permission.
      </p>
      <p>
        <Link href="/">Back to the assets</Link>
      </p>
    </>
  );
}

export function App({ config }: { config: ConsoleConfig }) {
  const route = useRoute();
  const session = useSession();

  useEffect(() => {
    const title = !session ? TITLES.login : mayUse(route.name, session.permissions) ? TITLES[route.name] : 'Not permitted';
    document.title = `${title} · DAM console`;
  }, [route.name, session]);
  // A new page moves the focus to its content, as a page load would (screen readers announce it); not on the
  // first render, and not when only the search of the asset browser changes.
  const pageKey = route.name === 'asset' ? `asset:${route.id}` : route.name;
  const firstPage = useRef(true);
  useEffect(() => {
    if (firstPage.current) {
      firstPage.current = false;
      return;
    }
    document.getElementById('main')?.focus();
  }, [pageKey]);
  // /console/login once signed in: on to the assets.
  useEffect(() => {
    if (session && route.name === 'login') navigate('/', true);
  }, [session, route.name]);

  // Signed out (or the session expired: a 401 clears it): the sign-in form, then back to the page asked for.
  if (!session) return <LoginPage onSignedIn={() => route.name === 'login' && navigate('/', true)} />;
  if (route.name === 'login') return null;

  let page;
  switch (route.name) {
    case 'browser':
      page = <BrowserPage session={session} query={route.query} />;
      break;
    case 'asset':
      page = <AssetPage key={route.id} session={session} config={config} id={route.id} />;
      break;
    case 'upload':
      page = <UploadPage session={session} config={config} />;
      break;
    case 'collections':
      page = <CollectionsPage session={session} />;
      break;
    case 'collection':
      page = <CollectionPage key={route.id} session={session} id={route.id} />;
      break;
    case 'jobs':
      page = <JobsPage session={session} />;
      break;
    case 'trash':
      page = <TrashPage session={session} />;
      break;
    case 'users':
      page = <UsersPage session={session} />;
      break;
    case 'api-keys':
      page = <ApiKeysPage session={session} />;
      break;
    case 'settings':
      page = <SettingsPage session={session} />;
      break;
    case 'schemas':
      page = <SchemasPage session={session} />;
      break;
    case 'usage':
      page = <UsagePage session={session} />;
      break;
    case 'webhooks':
      page = <WebhooksPage session={session} />;
      break;
    case 'not-found':
      page = (
        <>
          <h1>Not found</h1>
          <p>
            There is no such page. <Link href="/">Back to the assets</Link>
          </p>
        </>
      );
      break;
  }
  // The element is only made, never shown, when the role may not use the page: nothing of it runs.
  if (!mayUse(route.name, session.permissions)) page = <NotPermitted name={route.name} session={session} />;

  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">DAM console</span>
        <Nav route={route} session={session} />
        <div class="user">
          <span>{session.email}</span>
          <button type="button" onClick={() => setSession(undefined)}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </>
  );
}
