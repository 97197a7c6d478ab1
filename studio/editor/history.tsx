'use client';
import { useState } from 'react';
import { ApiError, apiGet, tenantPath } from '../api';
import { listOf, type InstanceView, type SnapshotView, type WorkflowView } from '../model';
import { setQueryData, useQuery } from '../query';
import { Dialog, Empty, ErrorBox, Loading, formatCount } from '../ui';
import type { WorkflowDefinition } from '../../server/model/workflow';
import { definitionToGraph } from '../convert';
import { EditorStore } from './store';


/** A stopped instance shown read-only: its version's graph with the snapshot counts. */
export type HistoryView = { instanceId: string | null; version: number; store: EditorStore };

export function HistoryDialog({ tenant, workflow, onPick, onClose }: { tenant: string; workflow: WorkflowView; onPick: (h: HistoryView) => void; onClose: () => void }) {
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

