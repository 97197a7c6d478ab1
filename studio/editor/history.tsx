'use client';
import { useState } from 'react';
import { type ApiError, apiGet, tenantPath } from '../api';
import { listOf, type InstanceView, type SnapshotView, type WorkflowView } from '../model';
import { setQueryData, useQuery } from '../query';
import { Dialog, Empty, ErrorBox, Loading, formatCount } from '../ui';
import type { WorkflowDefinition } from '../../core/model/workflow';
import { definitionToGraph, extrasOf } from '../convert';
import { compareVersions, type StepChange } from './compare';
import { RestoreVersion } from './restore-version';
import { EditorStore } from './store';

/** A past state shown read-only: a stopped instance (its version's graph with the snapshot counts) or a saved version. */
export type HistoryView = { instanceId: string | null; version: number; store: EditorStore };

export function HistoryDialog({
  tenant,
  workflow,
  onPick,
  onClose,
}: {
  tenant: string;
  workflow: WorkflowView;
  onPick: (h: HistoryView) => void;
  onClose: () => void;
}) {
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
      onPick({
        instanceId: instance.id,
        version: instance.version,
        store: new EditorStore(graph.nodes, graph.edges, { name: workflow.name, extras: extrasOf(version.definition) }),
      });
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

type VersionList = { current: number; versions: { version: number; createdAt: string }[] };

/** Every saved version: open one read-only on the canvas, or compare two step by step. */
export function VersionsDialog({
  tenant,
  workflow,
  onPick,
  onClose,
}: {
  tenant: string;
  workflow: WorkflowView;
  onPick: (h: HistoryView) => void;
  onClose: () => void;
}) {
  const versions = useQuery<VersionList>(`versions:${tenant}:${workflow.id}`, () => apiGet(tenantPath(tenant, `/workflows/${workflow.id}/versions`)));
  const [error, setError] = useState<ApiError | null>(null);
  const [left, setLeft] = useState<number | null>(workflow.version > 1 ? workflow.version - 1 : null);
  const [right, setRight] = useState<number>(workflow.version);
  const [changes, setChanges] = useState<StepChange[] | null>(null);
  const definitionOf = async (version: number) =>
    (await apiGet<{ definition: WorkflowDefinition }>(tenantPath(tenant, `/workflows/${workflow.id}/versions/${version}`))).definition;

  async function open(version: number) {
    try {
      const definition = await definitionOf(version);
      const graph = definitionToGraph(definition, workflow.draft);
      onPick({
        instanceId: null,
        version,
        store: new EditorStore(graph.nodes, graph.edges, { name: workflow.name, extras: extrasOf(definition) }),
      });
      onClose();
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  async function compare() {
    if (left === null) return;
    setError(null);
    try {
      const [older, newer] = await Promise.all([definitionOf(Math.min(left, right)), definitionOf(Math.max(left, right))]);
      setChanges(compareVersions(older, newer));
    } catch (caught) {
      setError(caught as ApiError);
    }
  }

  const list = versions.data?.versions ?? [];
  return (
    <Dialog title={`Versions of “${workflow.name}”`} onClose={onClose} testId="versions-dialog">
      <div className="dialog-body">
        {versions.loading && !versions.data && <Loading what="versions" />}
        {versions.error && <ErrorBox error={versions.error} />}
        <ul className="plain-list">
          {list.map((v) => (
            <li key={v.version} className="row spread" data-testid="version-item">
              <span>
                v{v.version}
                {v.version === versions.data?.current ? ' (latest)' : ''} · saved {new Date(v.createdAt).toLocaleString()}
              </span>
              <span className="row">
                <button type="button" className="link" onClick={() => void open(v.version)} data-testid={`open-v${v.version}`}>
                  Open read-only
                </button>
                {v.version !== versions.data?.current && (
                  <RestoreVersion tenant={tenant} workflow={workflow} version={v.version} latest={versions.data?.current ?? workflow.version} />
                )}
              </span>
            </li>
          ))}
        </ul>
        {list.length > 1 && (
          <div className="row">
            <label>
              Compare
              <select value={left ?? ''} onChange={(e) => setLeft(e.target.value ? Number(e.target.value) : null)} data-testid="compare-left">
                <option value="">Pick a version…</option>
                {list.map((v) => (
                  <option key={v.version} value={v.version}>
                    v{v.version}
                  </option>
                ))}
              </select>
            </label>
            <label>
              with
              <select value={right} onChange={(e) => setRight(Number(e.target.value))} data-testid="compare-right">
                {list.map((v) => (
                  <option key={v.version} value={v.version}>
                    v{v.version}
                  </option>
                ))}
              </select>
            </label>
            <button type="button" disabled={left === null || left === right} onClick={() => void compare()} data-testid="compare">
              Compare
            </button>
          </div>
        )}
        {changes && (
          <div data-testid="comparison">
            {changes.length === 0 ? (
              <p className="muted">The two versions are the same.</p>
            ) : (
              <ul className="plain-list">
                {changes.map((c, i) => (
                  <li key={i} className={`change change-${c.change}`} data-testid="change">
                    <strong>{c.step}</strong> <span className="badge">{c.change}</span>
                    {c.details.map((d) => (
                      <div key={d} className="small">
                        {d}
                      </div>
                    ))}
                  </li>
                ))}
              </ul>
            )}
          </div>
        )}
        {error && <ErrorBox error={error} />}
      </div>
    </Dialog>
  );
}
