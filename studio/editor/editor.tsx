'use client';
import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useReactFlow } from '@xyflow/react';
import { useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore, type DragEvent, type RefObject } from 'react';
import { apiGet, tenantPath } from '../api';
import { CANVAS_KINDS, definitionToGraph, extrasOf, PRESETS, type CanvasKind, type Preset, type StepNode } from '../convert';
import { useLeaveGuard } from '../leave-guard';
import type { WorkflowView } from '../model';
import type { SavedWorkflow } from '../../server/workflows/workflows';
import { useQuery } from '../query';
import { ErrorBox, Loading } from '../ui';
import { AsOfContext, asOfCountsKey, AsOfStrip, useAsOf } from './as-of';
import { CanvasContext, type CanvasInfo } from './context';
import { clearLocalDraft, keepLocalDraft, readLocalDraft, type LocalDraft } from './draft';
import { fitOptions, MIN_ZOOM, MINIMAP_SIZE, showsMinimap } from './fit';
import { GoalResultBar } from './goal-result';
import { Inspector } from './inspector';
import { useCanvasKeys } from './canvas-keys';
import { StepDeletion } from './delete-step';
import type { HistoryView } from './history';
import { useLiveCounts } from './operations';
import { edgeTypes, KIND_ICON, KIND_LABEL, nodeTypes } from './nodes';
import { useReveal } from './reveal';
import { UserPathProvider } from './user-path';
import { EditorContext, EditorStore, useEditor, useEditorStore } from './store';
import { Toolbar, workflowKey } from './toolbar';

const DRAG_TYPE = 'application/x-crowdflow-step';

export { workflowKey };

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
    return new EditorStore(graph.nodes, graph.edges, {
      name: workflow.name,
      stopAt: workflow.definition.stopAt,
      extras: extrasOf(workflow.definition),
    });
  });
  const [history, setHistory] = useState<HistoryView | null>(null);
  const dirty = useSyncedDirty(store);
  useLeaveGuard(dirty, `“${workflow.name}” has unsaved changes. Leave anyway? They stay in this browser, and the editor offers them back when you return.`);
  const version = useRef(workflow.version);
  useEffect(() => {
    version.current = workflow.version;
  }, [workflow.version]);
  useEffect(() => keepLocalDraft(store, tenant, workflow.id, () => version.current), [store, tenant, workflow.id]);
  const instanceId = history?.instanceId ?? workflow.running?.instanceId ?? null;
  useLiveCounts(tenant, workflow.id, history ? null : (workflow.running?.instanceId ?? null));
  // A past moment of the running instance (as-of.tsx), shown instead of its live counts; not of another instance.
  const [asOfPicked, setAsOf] = useState<{ instanceId: string; asOf: string } | null>(null);
  const running = history ? null : (workflow.running?.instanceId ?? null);
  const asOf = running && asOfPicked?.instanceId === running ? asOfPicked.asOf : null;
  const asOfState = useMemo(
    () => ({ asOf, setAsOf: (moment: string | null) => setAsOf(moment && running ? { instanceId: running, asOf: moment } : null) }),
    [asOf, running],
  );
  const info: CanvasInfo = {
    tenant,
    workflowId: workflow.id,
    instanceId,
    countsKey: history
      ? history.instanceId
        ? `snapshot:${tenant}:${history.instanceId}`
        : null
      : running
        ? asOf
          ? asOfCountsKey(tenant, running, asOf)
          : `counts:${tenant}:${workflow.id}`
        : null,
    readOnly: history !== null,
    live: !history && workflow.running !== null,
    // Save and get answers carry them (SavedWorkflow); the history view shows an older version without.
    warnings: history ? [] : ((workflow as Partial<SavedWorkflow>).warnings ?? []),
  };
  return (
    <EditorContext.Provider value={history?.store ?? store}>
      <CanvasContext.Provider value={info}>
        <AsOfContext.Provider value={asOfState}>
          <UserPathProvider key={history ? 'history' : 'live'}>
            <div className="editor">
              <Toolbar tenant={tenant} workflow={workflow} history={history} onHistory={setHistory} />
              {!history && <DraftOffer tenant={tenant} workflow={workflow} store={store} />}
              <StepDeletion>
                <div className="editor-body">
                  {!history && <Palette />}
                  <Canvas readOnly={history !== null} />
                  <Inspector readOnly={history !== null} />
                </div>
              </StepDeletion>
              <ProblemsBar />
            </div>
          </UserPathProvider>
        </AsOfContext.Provider>
      </CanvasContext.Provider>
    </EditorContext.Provider>
  );
}

/** The palette's entries: every kind of step, then the presets (a kind set up for one use), each dragged by its id. */
const PALETTE = [
  ...CANVAS_KINDS.map((kind) => ({ id: kind as string, kind, icon: KIND_ICON[kind], label: KIND_LABEL[kind], adds: kind as CanvasKind | Preset })),
  ...PRESETS.map((preset) => ({ id: preset.id, kind: preset.kind, icon: preset.icon, label: preset.label, adds: preset as CanvasKind | Preset })),
];

function Palette() {
  const store = useEditorStore();
  const { screenToFlowPosition } = useReactFlow();
  const reveal = useReveal();
  const addAtCenter = (kind: CanvasKind | Preset) => {
    const pane = document.querySelector('.editor-canvas')?.getBoundingClientRect();
    const center = pane ? screenToFlowPosition({ x: pane.left + pane.width / 2, y: pane.top + pane.height / 2 }) : { x: 0, y: 0 };
    const id = store.addNode(kind, { x: center.x - 110, y: center.y - 48 });
    const added = store.get().nodes.find((n) => n.id === id);
    if (added) reveal(added.position);
  };
  return (
    <aside className="palette" aria-label="Step palette">
      <h2>Steps</h2>
      {PALETTE.map(({ id, kind, icon, label, adds }) => (
        <div
          key={id}
          className={`palette-item step-${kind}`}
          draggable
          role="button"
          tabIndex={0}
          data-testid={`palette-${id}`}
          title="Drag onto the canvas, or press Enter to add"
          onDragStart={(event) => {
            event.dataTransfer.setData(DRAG_TYPE, id);
            event.dataTransfer.effectAllowed = 'move';
          }}
          onKeyDown={(event) => event.key === 'Enter' && addAtCenter(adds)}
          onDoubleClick={() => addAtCenter(adds)}
        >
          <span aria-hidden>{icon}</span> {label}
        </div>
      ))}
      <p className="muted small">Drag a step onto the canvas, or use “+” under a step.</p>
    </aside>
  );
}

/** The canvas element's width, followed as the window or the panels beside it change. */
function useWidth(element: RefObject<HTMLDivElement | null>): number {
  const [width, setWidth] = useState(0);
  // read before the first paint: React Flow's first fit (when it has measured the steps) already uses it
  useLayoutEffect(() => {
    if (!element.current) return;
    setWidth(element.current.clientWidth);
    const observer = new ResizeObserver(([entry]) => setWidth(entry.contentRect.width));
    observer.observe(element.current);
    return () => observer.disconnect();
  }, [element]);
  return width;
}

/** Room kept between the lowest step and the canvas's bottom edge when it would be cut off (px). */
const BOTTOM_ROOM = 24;

/**
 * Keeps the lowest step in view when the canvas gets shorter (the problems bar appearing under it) or the journey
 * taller without an edit (counts arriving make steps taller, and the steps below move down to make room): a step that
 * was in view stays in view and clickable. The journey is moved up at the same zoom as far as its top allows, else
 * fitted again. Where the marketer zoomed or scrolled the lowest step out of view, or is dragging a step, nothing moves.
 */
function useBottomStepInView(element: RefObject<HTMLDivElement | null>, nodes: StepNode[]) {
  const flow = useReactFlow();
  /** The canvas height and the journey's bottom (flow coordinates) at the last look. */
  const last = useRef<{ height: number; bottom: number } | null>(null);
  const look = useRef<() => void>(() => {});
  look.current = () => {
    const canvas = element.current?.querySelector<HTMLElement>('.react-flow');
    if (!canvas || nodes.length === 0) return;
    const height = canvas.clientHeight;
    const bounds = flow.getNodesBounds(nodes);
    const bottom = bounds.y + bounds.height;
    const before = last.current;
    last.current = { height, bottom };
    if (!before || (height >= before.height && bottom <= before.bottom) || nodes.some((n) => n.dragging)) return;
    const { x, y, zoom } = flow.getViewport();
    const onScreen = (flowY: number) => flowY * zoom + y;
    // only what was in view before: a journey the marketer zoomed into or scrolled past is left as it is
    if (onScreen(before.bottom) > before.height || onScreen(bottom) <= height - BOTTOM_ROOM) return;
    const up = onScreen(bottom) - (height - BOTTOM_ROOM);
    if (onScreen(bounds.y) - up >= BOTTOM_ROOM / 2) {
      void flow.setViewport({ x, y: y - up, zoom });
      return;
    }
    // Not enough room above: zoom out until the journey's height fits, its middle where it was across, its top
    // BOTTOM_ROOM below the canvas's top. (React Flow's fitView would use the size it last measured, the old one.)
    const fitted = Math.max(MIN_ZOOM, Math.min(zoom, (height - 2 * BOTTOM_ROOM) / bounds.height));
    const middle = (bounds.x + bounds.width / 2) * zoom + x;
    void flow.setViewport({ x: middle - (bounds.x + bounds.width / 2) * fitted, y: BOTTOM_ROOM - bounds.y * fitted, zoom: fitted });
  };
  useEffect(() => look.current());
  useLayoutEffect(() => {
    const canvas = element.current?.querySelector<HTMLElement>('.react-flow');
    if (!canvas) return;
    const observer = new ResizeObserver(() => look.current());
    observer.observe(canvas);
    return () => observer.disconnect();
  }, [element]);
}

function Canvas({ readOnly }: { readOnly: boolean }) {
  const store = useEditorStore();
  const element = useRef<HTMLDivElement>(null);
  const width = useWidth(element);
  const fit = fitOptions(width);
  const nodes = useEditor((s) => s.nodes);
  const edges = useEditor((s) => s.edges);
  const { screenToFlowPosition } = useReactFlow();
  useCanvasKeys(readOnly);
  useBottomStepInView(element, nodes);
  const { asOf } = useAsOf();

  const onDrop = (event: DragEvent) => {
    const kind = PALETTE.find((entry) => entry.id === event.dataTransfer.getData(DRAG_TYPE))?.adds;
    if (!kind || readOnly) return;
    event.preventDefault();
    const point = screenToFlowPosition({ x: event.clientX, y: event.clientY });
    store.addNode(kind, { x: point.x - 110, y: point.y - 30 });
  };

  return (
    <div ref={element} className={`editor-canvas${asOf ? ' past' : ''}`} onDrop={onDrop} onDragOver={(event) => event.preventDefault()} data-testid="canvas">
      <AsOfStrip />
      <GoalResultBar />
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
        fitViewOptions={fit}
        minZoom={MIN_ZOOM}
        proOptions={{ hideAttribution: true }}
      >
        <Background gap={20} />
        {showsMinimap(width) && <MiniMap pannable zoomable style={MINIMAP_SIZE} ariaLabel="Overview of the journey" />}
        <Controls fitViewOptions={fit} />
      </ReactFlow>
    </div>
  );
}

/** The problems of the document as it is now; each one selects its step and brings it into view. */
function ProblemsBar() {
  const store = useEditorStore();
  const problems = useEditor((s) => s.problems);
  const { fitView } = useReactFlow();
  if (problems.length === 0) return null;
  const show = (nodeId: string | null) => {
    if (!nodeId) return;
    store.select(nodeId);
    void fitView({ nodes: [{ id: nodeId }], duration: 250, maxZoom: 1 });
  };
  return (
    <div className="problems-bar" role="alert" data-testid="problems-bar">
      <strong>
        {problems.length} problem{problems.length === 1 ? '' : 's'}:
      </strong>
      {problems.slice(0, 4).map((p, i) =>
        p.nodeId ? (
          <button type="button" className="link problem-link" key={i} onClick={() => show(p.nodeId)} data-testid="problem-link">
            <strong>{p.step}</strong>: {p.text}
          </button>
        ) : (
          <span key={i} data-testid="problem-text">
            {p.step !== null && <strong>{p.step}: </strong>}
            {p.text}
          </span>
        ),
      )}
      {problems.length > 4 && <span>…and {problems.length - 4} more</span>}
    </div>
  );
}

function useSyncedDirty(store: EditorStore): boolean {
  return useSyncExternalStore(
    store.subscribe,
    () => store.get().dirty,
    () => false,
  );
}

/** Unsaved edits kept in this browser from an earlier visit, offered back once when the editor opens. */
function DraftOffer({ tenant, workflow, store }: { tenant: string; workflow: WorkflowView; store: EditorStore }) {
  const [draft, setDraft] = useState<LocalDraft | null>(null);
  useEffect(() => setDraft(readLocalDraft(tenant, workflow.id)), [tenant, workflow.id]);
  if (!draft) return null;
  const restore = () => {
    store.replaceDocument(draft.nodes, draft.edges, draft.name, draft.extras);
    setDraft(null);
  };
  const discard = () => {
    clearLocalDraft(tenant, workflow.id);
    setDraft(null);
  };
  return (
    <div className="draft-offer" role="status" data-testid="draft-offer">
      <span>
        Unsaved changes from {new Date(draft.savedAt).toLocaleString()} were kept in this browser
        {draft.version !== workflow.version ? ` (made on v${draft.version}; v${workflow.version} was saved since)` : ''}.
      </span>
      <button type="button" className="primary" onClick={restore} data-testid="draft-restore">
        Restore them
      </button>
      <button type="button" onClick={discard} data-testid="draft-discard">
        Discard
      </button>
    </div>
  );
}
