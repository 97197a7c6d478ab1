'use client';
import { useRouter, useSearchParams } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { type ApiError, apiCall } from './api';
import { resetQueries } from './query';
import { ErrorBox } from './ui';

export function SignInForm() {
  const router = useRouter();
  const next = useSearchParams().get('next');
  const [token, setToken] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await apiCall('POST', '/session', { token });
      resetQueries();
      // only same-site paths: never an open redirect
      router.replace(next?.startsWith('/') && !next.startsWith('//') ? next : '/');
    } catch (caught) {
      setError(caught as ApiError);
      setBusy(false);
    }
  }

  return (
    <main className="signin">
      <form onSubmit={submit} className="card">
        <h1>Crowdflow</h1>
        <p className="muted">Sign in with the admin token.</p>
        <p className="muted small" data-testid="token-hint">
          Where is it? <code>npm run demo</code> wrote it to the <code>.env</code> file in the project folder as <code>CROWDFLOW_ADMIN_TOKEN=…</code> and
          printed it when the server started.
        </p>
        <label>
          Admin token
          <input type="password" name="token" autoComplete="current-password" value={token} onChange={(e) => setToken(e.target.value)} required autoFocus />
        </label>
        {error && <ErrorBox error={error} />}
        <button type="submit" className="primary" disabled={busy || !token}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
