'use client';
import Link from 'next/link';
import { useRouter } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { type ApiError, apiCall, apiGet, tenantPath } from './api';
import { listOf, type WorkflowView } from './model';
import { invalidate, useQuery } from './query';
import { ListTable, type Column } from './list-table';
import { ErrorBox, formatCount } from './ui';

export const workflowsKey = (tenant: string) => `workflows:${tenant}`;

export function useWorkflows(tenant: string) {
  return useQuery<WorkflowView[]>(workflowsKey(tenant), async () => listOf<WorkflowView>(await apiGet(tenantPath(tenant, '/workflows')), 'workflows'));
}

/** A new workflow starts as one entry step so it is valid (and drawable) from the first save. */
const STARTER = { steps: [{ name: 'start', kind: 'direct' as const }] };

export function WorkflowList({ tenant }: { tenant: string }) {
  const router = useRouter();
  const workflows = useWorkflows(tenant);
  const [name, setName] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const base = `/t/${encodeURIComponent(tenant)}/workflows`;

  async function act(action: () => Promise<unknown>) {
    setError(null);
    try {
      await action();
      await invalidate(workflowsKey(tenant));
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  async function create(event: FormEvent) {
    event.preventDefault();
    await act(async () => {
      const created = await apiCall<WorkflowView>('POST', tenantPath(tenant, '/workflows'), {
        name,
        definition: STARTER,
        draft: { positions: { start: { x: 0, y: 0 } }, labels: {} },
      });
      router.push(`${base}/${created.id}`);
    });
  }

  const duplicate = (workflow: WorkflowView) =>
    act(async () => {
      const full = await apiGet<WorkflowView>(tenantPath(tenant, `/workflows/${workflow.id}`));
      await apiCall('POST', tenantPath(tenant, '/workflows'), { name: `${full.name} (copy)`, definition: full.definition, draft: full.draft ?? undefined });
    });

  const remove = (workflow: WorkflowView) => {
    if (!window.confirm(`Delete workflow "${workflow.name}" and all its versions?`)) return;
    return act(() => apiCall('DELETE', tenantPath(tenant, `/workflows/${workflow.id}`)));
  };

  const columns: Column<WorkflowView>[] = [
    { header: 'Name', cell: (w) => <Link href={`${base}/${w.id}`}>{w.name}</Link> },
    { header: 'Version', cell: (w) => `v${w.version}` },
    {
      header: 'Status',
      cell: (w) => (w.running ? <span className="badge running">running</span> : <span className="badge">idle</span>),
    },
    { header: 'Users', cell: (w) => (w.running ? formatCount(w.running.userCount) : '—') },
    { header: 'Updated', cell: (w) => new Date(w.updatedAt).toLocaleString(), className: 'muted' },
    {
      header: '',
      className: 'actions',
      cell: (w) => (
        <>
          <button type="button" className="link" onClick={() => void duplicate(w)}>
            Duplicate
          </button>
          <button type="button" className="link danger" onClick={() => void remove(w)}>
            Delete
          </button>
        </>
      ),
    },
  ];

  return (
    <section className="stack">
      <header className="row spread">
        <h1>Workflows</h1>
        <form onSubmit={create} className="row new-workflow">
          <label>
            New workflow name
            <input placeholder="Welcome journey" value={name} onChange={(e) => setName(e.target.value)} required data-testid="new-workflow-name" />
          </label>
          <button type="submit" className="primary">
            New workflow
          </button>
        </form>
      </header>
      {error && <ErrorBox error={error} />}
      <ListTable
        query={workflows}
        what="workflows"
        empty="No workflows yet. Name one above and draw it on the canvas."
        columns={columns}
        rowKey={(w) => w.id}
        testId="workflow-table"
        rowTestId="workflow-row"
      />
    </section>
  );
}
