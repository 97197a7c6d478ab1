'use client';
import { useState } from 'react';
import { type ApiError, apiCall, apiGet, tenantPath } from '../api';
import { definitionToGraph, extrasOf } from '../convert';
import type { WorkflowView } from '../model';
import { invalidate, setQueryData } from '../query';
import { Dialog, ErrorBox } from '../ui';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { useEditorStore } from './store';
import { workflowKey } from './toolbar';

// "Restore this version": an older version saved again as the newest (v(latest + 1) equal to it), after a question
// that names the version; nothing in between is deleted. The canvas then shows the restored journey, saved, and the
// edits it replaced stay one Undo away.

export function RestoreVersion({ tenant, workflow, version, latest }: { tenant: string; workflow: WorkflowView; version: number; latest: number }) {
  const store = useEditorStore();
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);

  async function restore() {
    setBusy(true);
    setError(null);
    try {
      const { definition } = await apiGet<{ definition: WorkflowDefinition }>(tenantPath(tenant, `/workflows/${workflow.id}/versions/${version}`));
      const saved = await apiCall<WorkflowView>('PUT', tenantPath(tenant, `/workflows/${workflow.id}`), { definition });
      const graph = definitionToGraph(saved.definition, saved.draft);
      store.replaceDocument(graph.nodes, graph.edges, saved.name, extrasOf(saved.definition), `restore version ${version}`);
      store.markSaved();
      setQueryData(workflowKey(tenant, workflow.id), saved);
      await invalidate(`versions:${tenant}:${workflow.id}`);
      setAsking(false);
    } catch (caught) {
      setError(caught as ApiError);
    } finally {
      setBusy(false);
    }
  }

  return (
    <>
      <button type="button" className="link" onClick={() => setAsking(true)} data-testid={`restore-v${version}`}>
        Restore this version
      </button>
      {asking && (
        <Dialog title={`Restore version ${version}?`} onClose={() => setAsking(false)} testId="restore-dialog">
          <div className="dialog-body">
            <p>
              Version {version} is saved again as version {latest + 1}, the newest.{' '}
              {latest === version + 1 ? `Version ${latest} stays` : `Versions ${version + 1}–${latest} stay`} in the list.
            </p>
            {store.get().dirty && <p className="field-error">The unsaved changes on the canvas are replaced (Undo brings them back).</p>}
            {workflow.running && <p className="muted">The running instance keeps its version until you apply the new one to it.</p>}
            {error && <ErrorBox error={error} />}
            <div className="row">
              <button type="button" className="primary" onClick={() => void restore()} disabled={busy} data-testid="restore-confirm">
                Restore version {version}
              </button>
              <button type="button" onClick={() => setAsking(false)}>
                Cancel
              </button>
            </div>
          </div>
        </Dialog>
      )}
    </>
  );
}
