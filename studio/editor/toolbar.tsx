'use client';
import { useReactFlow } from '@xyflow/react';
import Link from 'next/link';
import { useEffect, useState } from 'react';
import { type ApiError, apiCall, tenantPath } from '../api';
import { graphToDefinition } from '../convert';
import type { WorkflowProblem, WorkflowView } from '../model';
import { invalidate, setQueryData } from '../query';
import { ErrorBox } from '../ui';
import { workflowsKey } from '../workflows';
import { clearLocalDraft } from './draft';
import { currentFitOptions } from './fit';
import type { HistoryView } from './history';
import { LiveToolbar } from './live';
import { useEditor, useEditorStore } from './store';

export const workflowKey = (tenant: string, id: string) => `workflow:${tenant}:${id}`;

/** Deep equality of JSON values regardless of key order. */
function sameJson(left: unknown, right: unknown): boolean {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([k, v]) => [k, canonical(v)]),
          )
        : value;
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right));
}

/** Saves the canvas: a new version when the definition changed, only name and layout when it did not. */
function useSave(tenant: string, workflow: WorkflowView) {
  const store = useEditorStore();
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  // A save's notice names the version it made: once another version is current (an experiment's winner, a save in
  // another tab), "Saved version 2." beside a v3 badge would misstate what runs, so it is shown only for its version.
  const [notice, setNotice] = useState<{ text: string; version: number } | null>(null);

  async function save() {
    const { nodes, edges, name, problems, extras } = store.get();
    setError(null);
    setNotice(null);
    if (problems.length > 0) {
      setNotice({ text: 'Not saved: fix the problems marked on the steps.', version: workflow.version });
      return;
    }
    const { definition, draft } = graphToDefinition(nodes, edges, workflow.definition.stopAt, extras);
    setSaving(true);
    try {
      // moving steps around is not a new version: an unchanged definition saves only the name and the layout
      const changed = !sameJson(definition, workflow.definition);
      const saved = await apiCall<WorkflowView>(
        'PUT',
        tenantPath(tenant, `/workflows/${workflow.id}`),
        changed ? { name, definition, draft } : { name, draft },
      );
      setQueryData(workflowKey(tenant, workflow.id), saved);
      store.markSaved();
      clearLocalDraft(tenant, workflow.id);
      setNotice({
        text: changed ? `Saved version ${saved.version}.` : `Saved (layout and labels only; still version ${saved.version}).`,
        version: saved.version,
      });
      void invalidate(workflowsKey(tenant));
    } catch (caught) {
      const apiError = caught as ApiError;
      const problems = (apiError.details as { problems?: WorkflowProblem[] } | undefined)?.problems;
      if (apiError.code === 'invalid_workflow' && problems) store.setServerProblems(problems);
      // the canvas keeps every edit: a failed save loses nothing
      setError(apiError);
    } finally {
      setSaving(false);
    }
  }
  return { save, saving, error, notice: notice?.version === workflow.version ? notice.text : null };
}

export function Toolbar({
  tenant,
  workflow,
  history,
  onHistory,
}: {
  tenant: string;
  workflow: WorkflowView;
  history: HistoryView | null;
  onHistory: (h: HistoryView | null) => void;
}) {
  const store = useEditorStore();
  const dirty = useEditor((s) => s.dirty);
  const canUndo = useEditor((s) => s.canUndo);
  const canRedo = useEditor((s) => s.canRedo);
  const undoLabel = useEditor((s) => s.undoLabel);
  const undoCrossesSave = useEditor((s) => s.undoCrossesSave);
  const redoLabel = useEditor((s) => s.redoLabel);
  const undone = useEditor((s) => s.undone);
  const name = useEditor((s) => s.name);
  const { fitView } = useReactFlow();
  const { save, saving, error, notice } = useSave(tenant, workflow);

  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if ((event.metaKey || event.ctrlKey) && event.key.toLowerCase() === 's') {
        event.preventDefault();
        void save();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  return (
    <div className="editor-toolbar">
      <div className="row">
        {/* the page's heading for a screen reader; the eye reads the name in the box beside the link */}
        <h1 className="visually-hidden">Workflow “{name}”</h1>
        <Link href={`/t/${encodeURIComponent(tenant)}`} className="muted">
          ← Workflows
        </Link>
        <input className="title-input" aria-label="Workflow name" value={name} onChange={(e) => store.setName(e.target.value)} readOnly={history !== null} />
        <span className="badge" data-testid="version" title="The latest saved version">
          v{history ? history.version : workflow.version}
        </span>
        {dirty && !history && <span className="badge unsaved">unsaved</span>}
      </div>
      {history ? (
        <div className="row">
          <span className="badge" data-testid="history-badge">
            {history.instanceId ? `history: instance ${history.instanceId.slice(0, 12)} (v${history.version})` : `version ${history.version}, read-only`}
          </span>
          <button type="button" onClick={() => onHistory(null)}>
            Back to the editor
          </button>
        </div>
      ) : (
        <div className="row">
          <button
            type="button"
            onClick={store.undo}
            disabled={!canUndo}
            title={undoLabel ? `Undo: ${undoLabel}${undoCrossesSave ? ', made before the last save' : ''} (Ctrl/Cmd+Z on the canvas)` : 'Nothing to undo'}
            aria-label={undoLabel ? `Undo: ${undoLabel}${undoCrossesSave ? ', made before the last save' : ''}` : 'Undo'}
            data-testid="undo"
          >
            Undo
          </button>
          <button
            type="button"
            onClick={store.redo}
            disabled={!canRedo}
            title={redoLabel ? `Redo: ${redoLabel} (Ctrl/Cmd+Shift+Z on the canvas)` : 'Nothing to redo'}
            aria-label={redoLabel ? `Redo: ${redoLabel}` : 'Redo'}
            data-testid="redo"
          >
            Redo
          </button>
          <button
            type="button"
            onClick={() => {
              store.autoLayout();
              requestAnimationFrame(() => void fitView({ ...currentFitOptions(), duration: 200 }));
            }}
          >
            Auto-layout
          </button>
          <button type="button" className="primary" onClick={() => void save()} disabled={saving} data-testid="save">
            {saving ? 'Saving…' : 'Save'}
          </button>
          <LiveToolbar tenant={tenant} workflow={workflow} dirty={dirty} onHistory={onHistory} />
        </div>
      )}
      <span className="notice" role="status" data-testid="undo-notice">
        {undone}
      </span>
      {notice && (
        <span className="notice" role="status" data-testid="save-notice">
          {notice}
        </span>
      )}
      {error && <ErrorBox error={error} />}
    </div>
  );
}
