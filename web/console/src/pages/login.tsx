import { useState } from 'preact/hooks';
import { api, errorText, setSession } from '../session';
import { handler } from '../lib/handler';

export function LoginPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { data, error: err } = await api(undefined).POST('/api/v1/login', { body: { email, password } });
      if (!data) {
        setError(errorText(err, 'Sign-in failed'));
        return;
      }
      setSession({
        jwt: data.jwt,
        uploadkey: data.uploadkey,
        userId: data.user_id,
        email: data.user_email,
        username: data.username,
        roleName: data.role_name,
        permissions: data.permissions,
      });
      onSignedIn();
    } catch (err) {
      setError(errorText(err, 'The server cannot be reached'));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main id="main" class="login">
      <div class="panel">
        <h1>Sign in to the DAM console</h1>
        <form onSubmit={handler(submit, (err) => setError(errorText(err)))} aria-describedby={error ? 'login-error' : undefined}>
          <div class="field">
            <label for="login-email">Email</label>
            <input id="login-email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="login-password">Password</label>
            <input
              id="login-password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </div>
          {error && (
            <p id="login-error" class="notice error" role="alert">
              {error}
            </p>
          )}
          <button type="submit" disabled={busy}>
            {busy ? 'Signing in…' : 'Sign in'}
          </button>
        </form>
      </div>
    </main>
  );
}
