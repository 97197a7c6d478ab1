'use client';
import { useState, type FormEvent } from 'react';
import { SecretShownOnce, useAction } from './actions';
import { apiCall, apiGet, tenantPath } from './api';
import { listOf } from './model';
import { invalidate, useQuery } from './query';
import { ErrorBox, ListStates } from './ui';

// The tenant's API keys: create one with scopes (the secret is shown once), see when each was last used, revoke.

type Scope = 'ingest' | 'read' | 'manage' | 'keys';
type KeyView = {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  createdBy: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

const SCOPES: { scope: Scope; label: string }[] = [
  { scope: 'ingest', label: 'ingest — send events' },
  { scope: 'read', label: 'read — crowds, workflows, instances, counts, exports, notifications' },
  { scope: 'manage', label: 'manage — change crowds, profiles, workflows; start and stop instances' },
  { scope: 'keys', label: 'keys — create and revoke API keys' },
];

const keysKey = (tenant: string) => `keys:${tenant}`;
const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString() : '—');

function CreateKeyForm({ tenant }: { tenant: string }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['ingest']);
  const [created, setCreated] = useState<(KeyView & { secret: string }) | null>(null);
  const action = useAction();

  function create(event: FormEvent) {
    event.preventDefault();
    setCreated(null);
    void action.run(async () => {
      setCreated(await apiCall<KeyView & { secret: string }>('POST', tenantPath(tenant, '/keys'), { name, scopes }));
      setName('');
      await invalidate(keysKey(tenant));
    });
  }

  const toggle = (scope: Scope, on: boolean) => setScopes((previous) => (on ? [...previous, scope] : previous.filter((s) => s !== scope)));
  return (
    <form onSubmit={create} className="card" data-testid="key-form">
      <h2>New API key</h2>
      <div className="row">
        <label>
          Name
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={100} data-testid="key-name" />
        </label>
        <fieldset className="choices" data-testid="key-scopes">
          <legend>Scopes</legend>
          {SCOPES.map(({ scope, label }) => (
            <label key={scope} className="inline">
              <input type="checkbox" checked={scopes.includes(scope)} onChange={(e) => toggle(scope, e.target.checked)} data-testid={`key-scope-${scope}`} />{' '}
              {label}
            </label>
          ))}
        </fieldset>
        <button type="submit" className="primary" disabled={!name.trim() || scopes.length === 0} data-testid="key-create">
          Create key
        </button>
      </div>
      {created && (
        <SecretShownOnce secret={created.secret} testId="key-secret">
          Key “{created.name}” created. Copy the secret now: it is shown only once.
        </SecretShownOnce>
      )}
      {action.error && <ErrorBox error={action.error} />}
    </form>
  );
}

export function KeysPage({ tenant }: { tenant: string }) {
  const keys = useQuery<KeyView[]>(keysKey(tenant), async () => listOf<KeyView>(await apiGet(tenantPath(tenant, '/keys')), 'keys'));
  const action = useAction();

  function revoke(key: KeyView) {
    if (!window.confirm(`Revoke API key "${key.name}" (${key.prefix}…)? Keys it created are revoked too.`)) return;
    void action.run(async () => {
      await apiCall('DELETE', tenantPath(tenant, `/keys/${encodeURIComponent(key.id)}`));
      await invalidate(keysKey(tenant));
    });
  }

  return (
    <section className="stack">
      <h1>API keys</h1>
      <CreateKeyForm tenant={tenant} />
      {action.error && <ErrorBox error={action.error} />}
      <ListStates query={keys} what="API keys" empty="No API keys yet. Create one above for an integration." />
      {keys.data && keys.data.length > 0 && (
        <table data-testid="key-table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Key</th>
              <th>Scopes</th>
              <th>Created</th>
              <th>Last used</th>
              <th>Status</th>
              <th>
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {keys.data.map((k) => (
              <tr key={k.id} data-testid="key-row" data-key={k.name}>
                <td>{k.name}</td>
                <td>
                  <code>{k.prefix}…</code>
                </td>
                <td>{k.scopes.join(', ')}</td>
                <td className="muted">
                  {when(k.createdAt)}
                  {k.createdBy !== 'admin' && <span className="small"> by key {k.createdBy}</span>}
                </td>
                <td className="muted" data-testid="key-last-used">
                  {when(k.lastUsedAt)}
                </td>
                <td data-testid="key-status">{k.revokedAt ? `revoked ${when(k.revokedAt)}` : 'active'}</td>
                <td className="actions">
                  {!k.revokedAt && (
                    <button type="button" className="link danger" onClick={() => revoke(k)} data-testid="key-revoke">
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
