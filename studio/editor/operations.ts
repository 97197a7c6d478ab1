'use client';
import { useEffect, useState } from 'react';
import { type ApiError, API_ROOT, apiGet, tenantPath } from '../api';
import { PROCEDURE_FINISHED, type Counts, type ProcedureView } from '../model';
import { invalidate, setQueryData } from '../query';
import { workflowsKey } from '../workflows';
import { liveCountsKey } from './context';

// The running instance seen from the editor: its live counts (SSE) and the procedures its operations run.
/** Streams the running instance's counts (SSE) into the counts query; nodes and edges read them from there. */
export function useLiveCounts(tenant: string, workflowId: string, instanceId: string | null) {
  useEffect(() => {
    if (!instanceId) return;
    const key = liveCountsKey(tenant, workflowId);
    const path = tenantPath(tenant, `/instances/${instanceId}/counts`);
    let closed = false;
    let streamed = false;
    // A first value at once, so the graph does not wait for the first move; the stream corrects any failure. An answer
    // slower than the stream's first push is older than it: it would put back counts from before a move or a conversion.
    apiGet<Counts>(path)
      .then((counts) => !closed && !streamed && setQueryData(key, counts))
      .catch(() => {});
    const source = new EventSource(`${API_ROOT}${path}/stream`, { withCredentials: true });
    source.addEventListener('counts', (event) => {
      streamed = true;
      setQueryData(key, JSON.parse((event as MessageEvent<string>).data) as Counts);
    });
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

/** Runs an instance operation (a procedure) and reports its progress and outcome. */
export function useOperation(tenant: string, workflowId: string) {
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
      await Promise.all([
        invalidate(`workflow:${tenant}:${workflowId}`),
        invalidate(workflowsKey(tenant)),
        invalidate(`instances:${tenant}:${workflowId}`),
        invalidate(`instance:${tenant}:`),
      ]);
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
