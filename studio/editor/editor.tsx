'use client';
import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useReactFlow } from '@xyflow/react';
import Link from 'next/link';
import { useEffect, useState, type DragEvent } from 'react';
import { validateWorkflow } from '../../server/model/validate';
import { ApiError, apiCall, apiGet, tenantPath } from '../api';
import { CANVAS_KINDS, canvasProblems, definitionToGraph, graphToDefinition, type CanvasKind, type StepNode } from '../convert';
import type { WorkflowProblem, WorkflowView } from '../model';
import { invalidate, setQueryData, useQuery } from '../query';
import { ErrorBox, Loading } from '../ui';
import { workflowsKey } from '../workflows';
import { CanvasContext, type CanvasInfo } from './context';
import { Inspector } from './inspector';
import { LiveToolbar, useLiveCounts, type HistoryView } from './live';
import { edgeTypes, KIND_ICON, KIND_LABEL, nodeTypes } from './nodes';
import { EditorContext, EditorStore, useEditor, useEditorStore } from './store';

const DRAG_TYPE = 'application/x-crowdflow-step';

export const workflowKey = (tenant: string, id: string) => `workflow:${tenant}:${id}`;

export function WorkflowEditorPage({ tenant, id }: { tenant: string; id: string }) {
  const workflow = useQuery<WorkflowView>(workflowKey(tenant, id), () => apiGet(tenantPath(tenant, `/workflows/${id}`)), { refetchMs: 5000 });
  if (!workflow.data) {
    return workflow.error ? <ErrorBox error={workflow.error} onRetry={workflow.refetch} /> : <Loading what="the workflow" />;
  }
  return (
    <ReactFlowProvider>
      <Editor key={id} tenant={tenant} workflow={workflow.data} />
    </ReactFlowProvider>
  );
}

function Editor({ tenant, workflow }: { tenant: string; workflow: WorkflowView }) {
  const [store] = useState(() => {
    const graph = definitionToGraph(workflow.definition, workflow.draft);
    return new EditorStore(graph.nodes, graph.edges);
  });
  const [history, setHistory] = useState<HistoryView | null>(null);
  const instanceId = history?.instanceId ?? workflow.running?.instanceId ?? null;
  useLiveCounts(tenant, workflow.id, history ? null : (workflow.running?.instanceId ?? null));
  const info: CanvasInfo = {
    tenant,
    workflowId: workflow.id,
    instanceId,
    countsKey: history ? `snapshot:${tenant}:${history.instanceId}` : workflow.running ? `counts:${tenant}:${workflow.id}` : null,
    readOnly: history !== null,
    live: !history && workflow.running !== null,
  };
  return (
    <EditorContext.Provider value={history?.store ?? store}>
      <CanvasContext.Provider value={info}>
        <div className="editor">
          <Toolbar tenant={tenant} workflow={workflow} history={history} onHistory={setHistory} />
          <div className="editor-body">
            {!history && <Palette />}
            <Canvas readOnly={history !== null} />
            <Inspector readOnly={history !== null} />
          </div>
          <ProblemsBar />
        </div>
      </CanvasContext.Provider>
    </EditorContext.Provider>
  );
}

function Palette() {
  const store = useEditorStore();
  const { screenToFlowPosition } = useReactFlow();
  const addAtCenter = (kind: CanvasKind) => {
    const pane = document.querySelector('.editor-canvas')?.getBoundingClientRect();
    const center = pane ? screenToFlowPosition({ x: pane.left + pane.width / 2, y: pane.top + pane.height / 2 }) : { x: 0, y: 0 };
    store.addNode(kind, { x: center.x - 110 + Math.random() * 40, y: center.y - 48 + Math.random() * 40 });
  };
  return (
    <aside className="palette" aria-label="Step palette">
      <h3>Steps</h3>
      {CANVAS_KINDS.map((kind) => (
        <div
          key={kind}
          className={`palette-item step-${kind}`}
          draggable
          role="button"
          tabIndex={0}
          data-testid={`palette-${kind}`}
          title="Drag onto the canvas, or press Enter to add"
          onDragStart={(event) => {
            event.dataTransfer.setData(DRAG_TYPE, kind);
            event.dataTransfer.effectAllowed = 'move';
          }}
          onKeyDown={(event) => event.key === 'Enter' && addAtCenter(kind)}
          onDoubleClick={() => addAtCenter(kind)}
        >
          <span aria-hidden>{KIND_ICON[kind]}</span> {KIND_LABEL[kind]}
        </div>
      ))}
      <p className="muted small">Drag a step onto the canvas, or use “+” under a step.</p>
    </aside>
  );
}

function isTyping(target: EventTarget | null): boolean {
  const element = target as HTMLElement | null;
  return !!element && (element.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(element.tagName));
}

function Canvas({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const { screenToFlowPosition } = useReactFlow();

  useEffect(() => {
    if (readOnly) return;
    const onKey = (event: KeyboardEvent) => {
      if (isTyping(event.target)) return;
      const mod = event.metaKey || event.ctrlKey;
      const key = event.key.toLowerCase();
      if (mod && key === 'z') store[event.shiftKey ? 'redo' : 'undo']();
      else if (mod && key === 'y') store.redo();
      else if (mod && key === 'c') store.copy();
      else if (mod && key === 'v') store.paste();
      else if (event.key === 'Delete' || event.key === 'Backspace') store.deleteSelected();
      else return;
      event.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [store, readOnly]);

  const onDrop = (event: DragEvent) => {
    const kind = event.dataTransfer.getData(DRAG_TYPE) as CanvasKind;
    if (!kind || readOnly) return;
    event.preventDefault();
    const point = screenToFlowPosition({ x: event.clientX, y: event.clientY });
    store.addNode(kind, { x: point.x - 110, y: point.y - 30 });
  };

  return (
    <div className="editor-canvas" onDrop={onDrop} onDragOver={(event) => event.preventDefault()} data-testid="canvas">
      <ReactFlow<StepNode>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={store.onNodesChange}
        onEdgesChange={store.onEdgesChange}
        onConnect={store.connect}
        onPaneClick={() => store.select(null)}
        nodesDraggable={!readOnly}
        nodesConnectable={!readOnly}
        deleteKeyCode={null}
        defaultEdgeOptions={{ type: 'step' }}
        fitView
        fitViewOptions={{ maxZoom: 1 }}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={20} />
        <MiniMap pannable zoomable />
        <Controls />
      </ReactFlow>
    </div>
  );
}

function ProblemsBar() {
  const problems = useEditor((s) => s.problems);
  if (problems.length === 0) return null;
  return (
    <div className="problems-bar" role="alert" data-testid="problems-bar">
      <strong>
        {problems.length} problem{problems.length === 1 ? '' : 's'}:
      </strong>
      {problems.slice(0, 4).map((p: WorkflowProblem) => (
        <span key={p.step + p.code + p.message}>{p.message}</span>
      ))}
      {problems.length > 4 && <span>…and {problems.length - 4} more</span>}
    </div>
  );
}

/** Deep equality of JSON values regardless of key order. */
function sameJson(left: unknown, right: unknown): boolean {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(canonical) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, canonical(v)])) : value;
  return JSON.stringify(canonical(left)) === JSON.stringify(canonical(right));
}

function Toolbar({ tenant, workflow, history, onHistory }: { tenant: string; workflow: WorkflowView; history: HistoryView | null; onHistory: (h: HistoryView | null) => void }) {
  const store = useEditorStore();
  const dirty = useEditor((s) => s.dirty);
  const canUndo = useEditor((s) => s.canUndo);
  const canRedo = useEditor((s) => s.canRedo);
  const { fitView } = useReactFlow();
  const [name, setName] = useState(workflow.name);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  async function save() {
    const { nodes, edges } = store.get();
    const { definition, draft } = graphToDefinition(nodes, edges, workflow.definition.stopAt);
    const result = validateWorkflow(definition, { now: Date.now() });
    setError(null);
    setNotice(null);
    if (!result.ok) {
      store.setProblems(canvasProblems(nodes, edges, result.problems));
      setNotice('Not saved: fix the problems marked on the steps.');
      return;
    }
    store.setProblems([]);
    setSaving(true);
    try {
      // moving steps around is not a new version: an unchanged definition saves only the name and the layout
      const changed = !sameJson(definition, workflow.definition);
      const saved = await apiCall<WorkflowView>('PUT', tenantPath(tenant, `/workflows/${workflow.id}`), changed ? { name, definition, draft } : { name, draft });
      setQueryData(`workflow:${tenant}:${workflow.id}`, saved);
      store.markSaved();
      setNotice(changed ? `Saved version ${saved.version}.` : `Saved (layout only; still version ${saved.version}).`);
      void invalidate(workflowsKey(tenant));
    } catch (caught) {
      const apiError = caught as ApiError;
      const problems = (apiError.details as { problems?: WorkflowProblem[] } | undefined)?.problems;
      if (apiError.code === 'invalid_workflow' && problems) store.setProblems(canvasProblems(nodes, edges, problems));
      // the canvas keeps every edit: a failed save loses nothing
      setError(apiError);
    } finally {
      setSaving(false);
    }
  }

  // leaving with unsaved edits asks first: a closed tab must not silently drop a morning's work
  useEffect(() => {
    if (!dirty) return;
    const onLeave = (event: BeforeUnloadEvent) => event.preventDefault();
    window.addEventListener('beforeunload', onLeave);
    return () => window.removeEventListener('beforeunload', onLeave);
  }, [dirty]);

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
        <Link href={`/t/${encodeURIComponent(tenant)}`} className="muted">
          ← Workflows
        </Link>
        <input className="title-input" aria-label="Workflow name" value={name} onChange={(e) => setName(e.target.value)} readOnly={history !== null} />
        <span className="badge" data-testid="version">
          v{workflow.version}
        </span>
        {dirty && <span className="badge unsaved">unsaved</span>}
      </div>
      {history ? (
        <div className="row">
          <span className="badge">history: instance {history.instanceId.slice(0, 12)} (v{history.version})</span>
          <button type="button" onClick={() => onHistory(null)}>
            Back to the editor
          </button>
        </div>
      ) : (
        <div className="row">
          <button type="button" onClick={store.undo} disabled={!canUndo} title="Undo (Ctrl/Cmd+Z)">
            Undo
          </button>
          <button type="button" onClick={store.redo} disabled={!canRedo} title="Redo (Ctrl/Cmd+Shift+Z)">
            Redo
          </button>
          <button
            type="button"
            onClick={() => {
              store.autoLayout();
              requestAnimationFrame(() => void fitView({ duration: 200 }));
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
      {notice && (
        <span className="notice" data-testid="save-notice">
          {notice}
        </span>
      )}
      {error && <ErrorBox error={error} />}
    </div>
  );
}
