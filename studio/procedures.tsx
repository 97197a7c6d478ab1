'use client';
import Link from 'next/link';
import { useState } from 'react';
import { type ApiError, apiCall, apiGet } from './api';
import { ListTable, type Column } from './list-table';
import { listOf, type ProcedureDetail, type ProcedureView } from './model';
import { invalidate, useQuery } from './query';
import { useTenants } from './shell';
import { ErrorBox, Loading } from './ui';
import { describeProcedure } from './procedure-words';
import { useWorkflows } from './workflows';

const REFRESH_MS = 2000;
const STATES = ['', 'running', 'retrying', 'prepare-rollback', 'rolling-back', 'done', 'failed'];

const stateBadge = (state: string) => <span className={`badge ${state === 'failed' ? 'failed' : state === 'done' ? '' : 'running'}`}>{state}</span>;

/** The tenant's running and recent procedures, refreshed every 2 s; a row opens its details, with Retry on a failed one. */
export function ProceduresPanel({ tenant }: { tenant: string }) {
  const tenantId = useTenants().data?.tenants.find((t) => t.name === tenant || t.id === tenant)?.id;
  const [state, setState] = useState('');
  const [openId, setOpenId] = useState<string | null>(null);
  const all = useQuery<ProcedureView[]>(
    `procedures:${state}`,
    async () => listOf<ProcedureView>(await apiGet(`/procedures${state ? `?state=${state}` : ''}`), 'procedures'),
    { refetchMs: REFRESH_MS },
  );
  // the admin session sees every tenant's procedures; the page shows the picked tenant's
  const procedures = { ...all, data: all.data && tenantId ? all.data.filter((p) => p.tenantId === tenantId) : undefined };

  const journeys = useWorkflows(tenant).data;
  const journeyOf = (p: ProcedureView) => journeys?.find((w) => w.id === p.workflowId);
  const columns: Column<ProcedureView>[] = [
    {
      header: 'What',
      cell: (p) => (
        <button
          type="button"
          className="link"
          onClick={() => setOpenId(p.id === openId ? null : p.id)}
          aria-expanded={p.id === openId}
          data-testid="procedure-open"
        >
          {describeProcedure(p, journeyOf(p)?.name).what}
          {p.parentId && <span className="muted small"> (part of another)</span>}
        </button>
      ),
    },
    {
      header: 'Journey',
      cell: (p) => {
        const journey = journeyOf(p);
        return journey ? <Link href={`/t/${encodeURIComponent(tenant)}/workflows/${journey.id}`}>{journey.name}</Link> : '—';
      },
    },
    { header: 'State', cell: (p) => stateBadge(p.state) },
    {
      header: 'Result',
      cell: (p) => describeProcedure(p, journeyOf(p)?.name).outcome,
      className: 'small',
    },
    { header: 'Updated', cell: (p) => new Date(p.updatedAt).toLocaleString(), className: 'muted' },
  ];

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
      <div className="procedures">
        <div className="procedures-list">
          <ListTable
            query={procedures}
            what="procedures"
            empty={<>No procedures{state ? ` in state ${state}` : ''}. Starting, stopping or updating an instance runs one.</>}
            columns={columns}
            rowKey={(p) => p.id}
            testId="procedure-table"
            rowTestId="procedure-row"
            rowProps={(p) => ({ 'aria-selected': p.id === openId, className: p.id === openId ? 'selected-row' : undefined })}
          />
        </div>
        {openId && <ProcedureDetails id={openId} onOpen={setOpenId} journeyName={(id) => journeys?.find((w) => w.id === id)?.name} />}
      </div>
    </section>
  );
}

/** One procedure: what it is working on, its committed steps, its children and, when it failed, Retry. */
function ProcedureDetails({ id, onOpen, journeyName }: { id: string; onOpen: (id: string) => void; journeyName: (id: string | null) => string | undefined }) {
  const detail = useQuery<ProcedureDetail>(`procedure:${id}`, () => apiGet(`/procedures/${encodeURIComponent(id)}`), { refetchMs: REFRESH_MS });
  const [error, setError] = useState<ApiError | null>(null);
  const [retried, setRetried] = useState(false);
  async function retry() {
    setError(null);
    try {
      await apiCall('POST', `/procedures/${encodeURIComponent(id)}/retry`);
      setRetried(true);
      await Promise.all([invalidate('procedures:'), invalidate(`procedure:${id}`)]);
    } catch (caught) {
      setError(caught as ApiError);
    }
  }
  const p = detail.data;
  return (
    <aside className="card procedure-details" aria-label="Procedure details" data-testid="procedure-details">
      {!p && detail.loading && <Loading what="the procedure" />}
      {detail.error && <ErrorBox error={detail.error} onRetry={detail.refetch} />}
      {p && (
        <>
          <header className="row spread">
            <h2>
              {describeProcedure(p, journeyName(p.workflowId)).what} {stateBadge(p.state)}
            </h2>
            {p.state === 'failed' && (
              <button type="button" className="primary" onClick={() => void retry()} data-testid="procedure-retry">
                Retry
              </button>
            )}
          </header>
          {retried && p.state !== 'failed' && <p className="ok-text small">Retried: it runs again from step {p.step}.</p>}
          <p data-testid="procedure-outcome">{describeProcedure(p, journeyName(p.workflowId)).outcome}</p>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <code>{p.id}</code>
            </dd>
            {p.workflowId && (
              <>
                <dt>Journey</dt>
                <dd>{journeyName(p.workflowId) ?? <code>{p.workflowId}</code>}</dd>
              </>
            )}
            {p.state !== 'done' && (
              <>
                <dt>Step</dt>
                <dd>
                  {p.step} · {p.attempts} retr{p.attempts === 1 ? 'y' : 'ies'}
                  {p.nextAttemptAt ? ` · next at ${new Date(p.nextAttemptAt).toLocaleTimeString()}` : ''}
                </dd>
              </>
            )}
            <dt>Started</dt>
            <dd>{new Date(p.createdAt).toLocaleString()}</dd>
            {p.finishedAt && (
              <>
                <dt>Finished</dt>
                <dd>{new Date(p.finishedAt).toLocaleString()}</dd>
              </>
            )}
          </dl>
          {(p.error || p.rollbackError) && (
            <div className="state state-error" data-testid="procedure-error">
              {p.error && <p>{p.error}</p>}
              {p.rollbackError && <p>Rollback: {p.rollbackError}</p>}
            </div>
          )}
          <h3>Steps</h3>
          {p.steps.length === 0 ? (
            <p className="muted small">No step committed yet.</p>
          ) : (
            <ol className="plain-list" data-testid="procedure-steps">
              {p.steps.map((s) => (
                <li key={`${s.step}-${s.at}`}>
                  Step {s.step}: {s.state} <span className="muted small">{new Date(s.at).toLocaleTimeString()}</span>
                </li>
              ))}
            </ol>
          )}
          {p.children.length > 0 && (
            <>
              <h3>Children</h3>
              <ul className="plain-list" data-testid="procedure-children">
                {p.children.map((c) => (
                  <li key={c.id}>
                    <button type="button" className="link" onClick={() => onOpen(c.id)}>
                      {c.type}
                    </button>{' '}
                    {stateBadge(c.state)}
                  </li>
                ))}
              </ul>
            </>
          )}
          <details>
            <summary className="muted small">State data</summary>
            <pre className="json">{JSON.stringify(p.data, null, 2)}</pre>
          </details>
          {error && <ErrorBox error={error} />}
        </>
      )}
    </aside>
  );
}
