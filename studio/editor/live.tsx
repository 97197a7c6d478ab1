'use client';
import { useEffect, useState } from 'react';
import { ApiError, API_ROOT, apiCall, apiGet, tenantPath } from '../api';
import { listOf, PROCEDURE_FINISHED, type Counts, type CrowdView, type InstanceView, type ProcedureView, type SnapshotView, type WorkflowView } from '../model';
import { invalidate, setQueryData, useQuery } from '../query';
import { Dialog, Empty, ErrorBox, Loading, formatCount } from '../ui';
import { crowdsKey, UploadForm } from '../crowds';
import { workflowsKey } from '../workflows';
import type { WorkflowDefinition } from '../../server/model/workflow';
import { definitionToGraph } from '../convert';
import { liveCountsKey } from './context';
import { EditorStore } from './store';

/** Streams the running instance's counts (SSE) into the counts query; nodes and edges read them from there. */
export function useLiveCounts(tenant: string, workflowId: string, instanceId: string | null) {
  useEffect(() => {
    if (!instanceId) return;
    const key = liveCountsKey(tenant, workflowId);
    const base = `${API_ROOT}${tenantPath(tenant, `/instances/${instanceId}`)}`;
    let closed = false;
    // a first value at once, so the graph does not wait for the first move
    fetch(`${base}/counts`, { credentials: 'same-origin' })
      .then((r) => (r.ok ? (r.json() as Promise<Counts>) : null))
      .then((counts) => counts && !closed && setQueryData(key, counts))
      .catch(() => {});
    const source = new EventSource(`${base}/counts/stream`, { withCredentials: true });
    source.addEventListener('counts', (event) => setQueryData(key, JSON.parse((event as MessageEvent<string>).data) as Counts));
    return () => {
      closed = true;
      source.close();
    };
  }, [tenant, workflowId, instanceId]);
}

/** Waits (long-polling) until a procedure finishes; returns its final view. */
export async function waitForProcedure(id: string, onProgress?: (p: ProcedureView) => void): Promise<ProcedureView> {
  for (;;) {
    const procedure = await apiGet<ProcedureView>(`/procedures/${id}?wait=10`);
    onProgress?.(procedure);
    if (PROCEDURE_FINISHED.includes(procedure.state)) return procedure;
  }
}

function useCrowds(tenant: string) {
  return useQuery<CrowdView[]>(crowdsKey(tenant), async () => listOf<CrowdView>(await apiGet(tenantPath(tenant, '/crowds')), 'crowds'));
}

function CrowdPicker({ tenant, value, onChange }: { tenant: string; value: string; onChange: (name: string) => void }) {
  const crowds = useCrowds(tenant);
  if (crowds.loading && !crowds.data) return <Loading what="crowds" />;
  if (crowds.error) return <ErrorBox error={crowds.error} onRetry={crowds.refetch} />;
  if (!crowds.data?.length) return <Empty>No crowds in this tenant yet. Upload one on the Crowds page.</Empty>;
  const picked = crowds.data.find((c) => c.name === value);
  return (
    <label>
      Crowd
      <select value={value} onChange={(e) => onChange(e.target.value)} data-testid="crowd-select">
        <option value="">Pick a crowd…</option>
        {crowds.data.map((c) => (
          <option key={c.name} value={c.name}>
            {c.name} ({formatCount(c.count)} users)
          </option>
        ))}
      </select>
      {picked && <span data-testid="crowd-count">{formatCount(picked.count)} users in this crowd</span>}
    </label>
  );
}

/** Runs an instance operation (a procedure) and reports its progress and outcome. */
function useOperation(tenant: string, workflowId: string) {
  const [busy, setBusy] = useState(false);
  const [state, setState] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | Error | null>(null);
  async function run(submit: () => Promise<{ procedureId?: string } | undefined>): Promise<boolean> {
    setBusy(true);
    setError(null);
    try {
      const submitted = await submit();
      if (submitted?.procedureId) {
        const done = await waitForProcedure(submitted.procedureId, (p) => setState(`${p.type}: ${p.state} (step ${p.step})`));
        if (done.state === 'failed') throw new Error(done.error ?? 'The operation failed');
      }
      await Promise.all([invalidate(`workflow:${tenant}:${workflowId}`), invalidate(workflowsKey(tenant)), invalidate(`instances:${tenant}:${workflowId}`), invalidate(`instance:${tenant}:`)]);
      return true;
    } catch (caught) {
      setError(caught as Error);
      return false;
    } finally {
      setBusy(false);
    }
  }
  return { busy, state, error, run, setError };
}

function StartDialog({ tenant, workflow, onClose }: { tenant: string; workflow: WorkflowView; onClose: () => void }) {
  const [crowd, setCrowd] = useState('');
  const [uploading, setUploading] = useState(false);
  const [started, setStarted] = useState<InstanceView | null>(null);
  const op = useOperation(tenant, workflow.id);
  const start = async () => {
    let instanceId = '';
    const ok = await op.run(async () => {
      const submitted = await apiCall<{ procedureId: string; instanceId: string }>('POST', tenantPath(tenant, `/workflows/${workflow.id}/start`), { crowd, version: workflow.version });
      instanceId = submitted.instanceId;
      return submitted;
    });
    if (ok) setStarted(await apiGet<InstanceView>(tenantPath(tenant, `/instances/${instanceId}`)));
  };
  return (
    <Dialog title={`Start “${workflow.name}” v${workflow.version}`} onClose={onClose} testId="start-dialog">
      <div className="dialog-body">
        {started ? (
          <>
            <p data-testid="start-result">
              Started with {formatCount(started.userCount)} users from “{started.crowdName}”
              {started.excludedCount > 0 ? `; ${formatCount(started.excludedCount)} were excluded because a previous instance already had them` : ''}.
            </p>
            <button type="button" className="primary" onClick={onClose}>
              Close
            </button>
          </>
        ) : (
          <>
            <CrowdPicker tenant={tenant} value={crowd} onChange={setCrowd} />
            {uploading ? (
              <UploadForm tenant={tenant} onUploaded={(uploaded) => setCrowd(uploaded.name)} />
            ) : (
              <button type="button" className="link" onClick={() => setUploading(true)}>
                …or upload a new crowd
              </button>
            )}
            <p className="muted small">Users a previous instance of this workflow already had are excluded from the new one.</p>
            {op.state && <p className="muted small">{op.state}</p>}
            {op.error && <ErrorBox error={op.error} />}
            <div className="row">
              <button type="button" className="primary" disabled={!crowd || op.busy} onClick={() => void start()} data-testid="start-confirm">
                {op.busy ? 'Starting…' : 'Start'}
              </button>
              <button type="button" onClick={onClose}>
                Cancel
              </button>
            </div>
          </>
        )}
      </div>
    </Dialog>
  );
}

function UpdateCrowdDialog({ tenant, workflow, instanceId, onClose }: { tenant: string; workflow: WorkflowView; instanceId: string; onClose: () => void }) {
  const [crowd, setCrowd] = useState('');
  const op = useOperation(tenant, workflow.id);
  return (
    <Dialog title="Update the crowd of the running instance" onClose={onClose}>
      <div className="dialog-body">
        <CrowdPicker tenant={tenant} value={crowd} onChange={setCrowd} />
        <p className="muted small">New users join the entry step; users no longer in the crowd leave every step. No notifications are sent.</p>
        {op.error && <ErrorBox error={op.error} />}
        <button
          type="button"
          className="primary"
          disabled={!crowd || op.busy}
          onClick={() => void op.run(() => apiCall('POST', tenantPath(tenant, `/instances/${instanceId}/crowd`), { crowd })).then((ok) => ok && onClose())}
          data-testid="update-crowd-confirm"
        >
          Update crowd
        </button>
      </div>
    </Dialog>
  );
}

/** Moves the running instance to the saved version; users of removed steps must be mapped (the 409 says how many). */
function ApplyVersionDialog({ tenant, workflow, instanceId, onClose }: { tenant: string; workflow: WorkflowView; instanceId: string; onClose: () => void }) {
  const [stranded, setStranded] = useState<Record<string, number> | null>(null);
  const [mapping, setMapping] = useState<Record<string, string>>({});
  const op = useOperation(tenant, workflow.id);
  const steps = workflow.definition.steps.map((s) => s.name);
  async function apply() {
    const ok = await op.run(async () => {
      try {
        return await apiCall<{ procedureId: string }>('POST', tenantPath(tenant, `/instances/${instanceId}/workflow`), { version: workflow.version, ...(stranded ? { mapping } : {}) });
      } catch (caught) {
        const details = (caught as ApiError).details as { stranded?: Record<string, number> } | undefined;
        if ((caught as ApiError).status === 409 && details?.stranded) {
          setStranded(details.stranded);
          setMapping(Object.fromEntries(Object.keys(details.stranded).map((step) => [step, steps[0]])));
        }
        throw caught;
      }
    });
    if (ok) onClose();
  }
  return (
    <Dialog title={`Apply v${workflow.version} to the running instance`} onClose={onClose} testId="apply-dialog">
      <div className="dialog-body">
        <p className="muted small">Users stay in the step of the same name. Users in steps this version removes must go somewhere.</p>
        {stranded &&
          Object.entries(stranded).map(([step, count]) => (
            <label key={step}>
              {formatCount(count)} users in removed step “{step}” move to
              <select value={mapping[step]} onChange={(e) => setMapping({ ...mapping, [step]: e.target.value })}>
                {steps.map((s) => (
                  <option key={s}>{s}</option>
                ))}
              </select>
            </label>
          ))}
        {op.error && <ErrorBox error={op.error} />}
        <button type="button" className="primary" disabled={op.busy} onClick={() => void apply()} data-testid="apply-confirm">
          {stranded ? 'Apply with this mapping' : 'Apply'}
        </button>
      </div>
    </Dialog>
  );
}

/** A stopped instance shown read-only: its version's graph with the snapshot counts. */
export type HistoryView = { instanceId: string | null; version: number; store: EditorStore };

function HistoryDialog({ tenant, workflow, onPick, onClose }: { tenant: string; workflow: WorkflowView; onPick: (h: HistoryView) => void; onClose: () => void }) {
  const instances = useQuery<InstanceView[]>(`instances:${tenant}:${workflow.id}`, async () =>
    listOf<InstanceView>(await apiGet(tenantPath(tenant, `/instances?workflow=${workflow.id}&state=stopped`)), 'instances'),
  );
  const [error, setError] = useState<ApiError | null>(null);
  async function open(instance: InstanceView) {
    try {
      const [snapshot, version] = await Promise.all([
        apiGet<SnapshotView>(tenantPath(tenant, `/instances/${instance.id}/snapshot`)),
        apiGet<{ definition: WorkflowDefinition }>(tenantPath(tenant, `/workflows/${workflow.id}/versions/${instance.version}`)),
      ]);
      setQueryData(`snapshot:${tenant}:${instance.id}`, snapshot.counts);
      const graph = definitionToGraph(version.definition, workflow.draft);
      onPick({ instanceId: instance.id, version: instance.version, store: new EditorStore(graph.nodes, graph.edges, { name: workflow.name }) });
      onClose();
    } catch (caught) {
      setError(caught as ApiError);
    }
  }
  return (
    <Dialog title="Stopped instances" onClose={onClose} testId="history-dialog">
      <div className="dialog-body">
        {instances.loading && !instances.data && <Loading what="instances" />}
        {instances.error && <ErrorBox error={instances.error} />}
        {instances.data?.length === 0 && <Empty>No stopped instances of this workflow yet.</Empty>}
        {error && <ErrorBox error={error} />}
        <ul className="plain-list">
          {instances.data?.map((i) => (
            <li key={i.id}>
              <button type="button" className="link" onClick={() => void open(i)} data-testid="history-item">
                v{i.version} · {i.crowdName} · {formatCount(i.userCount)} users · stopped {i.stoppedAt ? new Date(i.stoppedAt).toLocaleString() : ''}
              </button>
            </li>
          ))}
        </ul>
      </div>
    </Dialog>
  );
}

type DialogName = 'start' | 'crowd' | 'apply' | 'history' | null;

export function LiveToolbar({ tenant, workflow, dirty, onHistory }: { tenant: string; workflow: WorkflowView; dirty: boolean; onHistory: (h: HistoryView) => void }) {
  const [dialog, setDialog] = useState<DialogName>(null);
  const stop = useOperation(tenant, workflow.id);
  const running = workflow.running;
  const instance = useQuery<InstanceView>(running ? `instance:${tenant}:${running.instanceId}` : null, () => apiGet(tenantPath(tenant, `/instances/${running!.instanceId}`)), { refetchMs: 5000 });
  const behind = running && instance.data && instance.data.version !== workflow.version;
  return (
    <>
      {running ? (
        <>
          <span className="badge running" data-testid="running-badge">
            running · {formatCount(running.userCount)} users
          </span>
          {behind && (
            <button type="button" onClick={() => setDialog('apply')} data-testid="apply-version">
              Apply v{workflow.version} to running
            </button>
          )}
          <button type="button" onClick={() => setDialog('crowd')}>
            Update crowd
          </button>
          <button type="button" className="danger" disabled={stop.busy} onClick={() => window.confirm('Stop this instance? Its counts are kept in the history.') && void stop.run(() => apiCall('POST', tenantPath(tenant, `/instances/${running.instanceId}/stop`)))} data-testid="stop">
            {stop.busy ? 'Stopping…' : 'Stop'}
          </button>
        </>
      ) : (
        <button type="button" className="primary" disabled={dirty} title={dirty ? 'Save first: only a saved, valid version can start' : ''} onClick={() => setDialog('start')} data-testid="start">
          Start…
        </button>
      )}
      <button type="button" onClick={() => setDialog('history')}>
        History
      </button>
      {stop.error && <ErrorBox error={stop.error} />}
      {dialog === 'start' && <StartDialog tenant={tenant} workflow={workflow} onClose={() => setDialog(null)} />}
      {dialog === 'crowd' && running && <UpdateCrowdDialog tenant={tenant} workflow={workflow} instanceId={running.instanceId} onClose={() => setDialog(null)} />}
      {dialog === 'apply' && running && <ApplyVersionDialog tenant={tenant} workflow={workflow} instanceId={running.instanceId} onClose={() => setDialog(null)} />}
      {dialog === 'history' && <HistoryDialog tenant={tenant} workflow={workflow} onPick={onHistory} onClose={() => setDialog(null)} />}
    </>
  );
}
