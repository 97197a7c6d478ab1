'use client';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { type ApiError, apiCall } from './api';
import { invalidate } from './query';
import type { TenantView } from './model';
import { signOut, useSignedIn, useTenants } from './shell';
import { Empty, ErrorBox, Loading } from './ui';

/** The landing page: pick a tenant to work in, or create one. */
export function TenantChooser() {
  const tenants = useTenants();
  useSignedIn(tenants);
  const router = useRouter();
  const [name, setName] = useState('');
  const [partitions, setPartitions] = useState(4);
  const [error, setError] = useState<ApiError | null>(null);

  async function create(event: FormEvent) {
    event.preventDefault();
    setError(null);
    try {
      const tenant = await apiCall<TenantView>('POST', '/tenants', { name, partitions });
      await invalidate('tenants');
      router.push(`/t/${encodeURIComponent(tenant.name)}`);
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  return (
    <main className="narrow">
      <header className="row spread">
        <h1>Crowdflow</h1>
        <button type="button" className="link" onClick={() => void signOut()}>
          Sign out
        </button>
      </header>
      <h2>Tenants</h2>
      <p className="muted" id="tenant-help" data-testid="tenant-help">
        A tenant is an isolated account with its own keys, crowds, workflows and events; a partition is a share of its users whose events one worker applies in
        order (more partitions, more cores; fixed at creation).
      </p>
      {tenants.loading && !tenants.data && <Loading what="tenants" />}
      {tenants.error && tenants.error.status !== 401 && <ErrorBox error={tenants.error} onRetry={tenants.refetch} />}
      {tenants.data && tenants.data.tenants.length === 0 && <Empty>No tenants yet. Create the first one below.</Empty>}
      {tenants.data && tenants.data.tenants.length > 0 && (
        <ul className="tenant-list">
          {tenants.data.tenants.map((t) => (
            <li key={t.id}>
              <Link href={`/t/${encodeURIComponent(t.name)}`} data-testid="tenant-link">
                {t.name}
              </Link>
              <span className="muted"> · {t.partitions} partitions</span>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={create} className="card row">
        <label>
          New tenant
          <input value={name} onChange={(e) => setName(e.target.value)} placeholder="acme" required data-testid="tenant-name" />
        </label>
        <label>
          Partitions
          <input
            type="number"
            min={1}
            max={256}
            value={partitions}
            onChange={(e) => setPartitions(Number(e.target.value))}
            aria-describedby="tenant-help"
            data-testid="tenant-partitions"
          />
        </label>
        <button type="submit" className="primary">
          Create tenant
        </button>
      </form>
      {error && <ErrorBox error={error} />}
    </main>
  );
}
