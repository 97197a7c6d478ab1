'use client';
import { useState } from 'react';
import { ApiError, apiCall, apiGet, pathSegment } from './api';
import { listOf, type ProcedureView } from './model';
import { invalidate, useQuery } from './query';
import { useTenants } from './shell';
import { ErrorBox, ListStates } from './ui';

const REFRESH_MS = 2000;
const STATES = ['', 'running', 'retrying', 'prepare-rollback', 'rolling-back', 'done', 'failed'];

/** The tenant's running and recent procedures, refreshed every 2 s, with Retry on a failed one. */
export function ProceduresPanel({ tenant }: { tenant: string }) {
  const tenantId = useTenants().data?.tenants.find((t) => t.name === tenant || t.id === tenant)?.id;
  const [state, setState] = useState('');
  const key = `procedures:${state}`;
  const all = useQuery<ProcedureView[]>(key, async () => listOf<ProcedureView>(await apiGet(`/procedures${state ? `?state=${state}` : ''}`), 'procedures'), { refetchMs: REFRESH_MS });
  // the admin session sees every tenant's procedures; the page shows the picked tenant's
  const procedures = { ...all, data: all.data && tenantId ? all.data.filter((p) => p.tenantId === tenantId) : undefined };
  const [error, setError] = useState<ApiError | null>(null);

  async function retry(id: string) {
    setError(null);
    try {
      await apiCall('POST', `/procedures/${pathSegment(id)}/retry`);
      await invalidate('procedures:');
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  return (
    <section className="stack">
      <header className="row spread">
        <h1>Procedures</h1>
        <label className="inline">
          State
          <select value={state} onChange={(e) => setState(e.target.value)}>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {s || 'all'}
              </option>
            ))}
          </select>
        </label>
      </header>
      {error && <ErrorBox error={error} />}
      <ListStates query={procedures} what="procedures" empty={<>No procedures{state ? ` in state ${state}` : ''}. Starting, stopping or updating an instance runs one.</>} />
      {procedures.data && procedures.data.length > 0 && (
        <table data-testid="procedure-table">
          <thead>
            <tr>
              <th>Type</th>
              <th>State</th>
              <th>Step</th>
              <th>Attempts</th>
              <th>Error</th>
              <th>Updated</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {procedures.data.map((p) => (
              <tr key={p.id} data-testid="procedure-row">
                <td title={p.id}>
                  {p.type}
                  {p.parentId && <span className="muted small"> (child)</span>}
                </td>
                <td>
                  <span className={`badge ${p.state === 'failed' ? 'failed' : p.state === 'done' ? '' : 'running'}`}>{p.state}</span>
                </td>
                <td>{p.step}</td>
                <td>{p.attempts}</td>
                <td className="danger small">{[p.error, p.rollbackError].filter(Boolean).join(' · ')}</td>
                <td className="muted">{new Date(p.updatedAt).toLocaleString()}</td>
                <td className="actions">
                  {p.state === 'failed' && (
                    <button type="button" onClick={() => void retry(p.id)}>
                      Retry
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
