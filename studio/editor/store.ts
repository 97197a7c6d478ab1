'use client';
import { applyEdgeChanges, applyNodeChanges, type Connection, type EdgeChange, type NodeChange, type XYPosition } from '@xyflow/react';
import { createContext, useContext, useSyncExternalStore } from 'react';
import type { WorkflowProblem } from '../../core/model/workflow';
import {
  defaultData,
  freeName,
  layout,
  makeEdge,
  NODE_HEIGHT,
  NODE_WIDTH,
  outputHandles,
  type CanvasKind,
  type FlowEdge,
  type Preset,
  type StepData,
  type StepNode,
  type WorkflowExtras,
} from '../convert';
import { freeSpot, makeRoom } from './placement';
import { describeProblems, validateCanvas, type CanvasProblem } from './problems';
import { fieldEditWords, quoted, stepsWords } from './undo-words';

// The editor's document (nodes + edges) with undo/redo, selection and its problems, re-validated on every
// edit with the server's validateWorkflow(). Plain TypeScript: React reads slices through
// useEditor(selector) — the tldraw idea: one store, small subscriptions — so typing in the inspector
// re-renders the inspector, not the whole canvas.

export type EditorState = {
  /** The workflow's name as edited in the toolbar (saved with the document). */
  name: string;
  nodes: StepNode[];
  edges: FlowEdge[];
  /** The workflow's event-triggered entry and goal (edited with nothing selected; undone like step edits). */
  extras: WorkflowExtras;
  selectedId: string | null;
  /** Problems of the document as it is now (validateWorkflow() after every edit), or the server's 400 after a save. */
  problems: CanvasProblem[];
  /** The document differs from the one last saved (or opened): compared, not flagged, so undoing every edit clears it. */
  dirty: boolean;
  canUndo: boolean;
  canRedo: boolean;
  /** What Undo and Redo would take back or do again, in words ("delete step “welcome”"). */
  undoLabel: string | null;
  /** Undo would take back an edit made before the last save (the canvas then differs from the saved version). */
  undoCrossesSave: boolean;
  redoLabel: string | null;
  /** The last undo or redo, said back ("Undone: delete step “welcome”"); cleared by the next edit. */
  undone: string | null;
};

type Snapshot = { nodes: StepNode[]; edges: FlowEdge[]; extras: WorkflowExtras };
/** An undo step: the document before an edit, and the edit in words. */
type UndoStep = Snapshot & { label: string };
const HISTORY_LIMIT = 100;
/** Edits to the same field within this window are one undo step (typing a name is one change). */
const COALESCE_MS = 800;

export class EditorStore {
  private state: EditorState;
  private past: UndoStep[] = [];
  private future: UndoStep[] = [];
  private listeners = new Set<() => void>();
  private lastEditKey: string | null = null;
  private lastEditAt = 0;
  private clipboard: Pick<Snapshot, 'nodes' | 'edges'> | null = null;
  private dragging = false;
  /** The document the problems were computed for (step data and connections; positions do not matter). */
  private validatedKey = '';
  private readonly stopAt: string | undefined;
  private readonly now: () => number;
  /** The saved document (documentKey), what `dirty` compares with. */
  private savedKey: string;
  /** How many undo steps lead back to the saved document (`past.length` at the save); -1 when undo cannot reach it. */
  private savedAt = 0;

  constructor(nodes: StepNode[], edges: FlowEdge[], options: { name?: string; stopAt?: string; extras?: WorkflowExtras; now?: () => number } = {}) {
    this.stopAt = options.stopAt;
    this.now = options.now ?? Date.now;
    const extras = options.extras ?? {};
    this.state = {
      name: options.name ?? '',
      nodes,
      edges,
      extras,
      selectedId: null,
      problems: [],
      dirty: false,
      canUndo: false,
      canRedo: false,
      undoLabel: null,
      undoCrossesSave: false,
      redoLabel: null,
      undone: null,
    };
    this.state.problems = this.revalidate(nodes, edges, extras) ?? [];
    this.savedKey = documentKey(this.state);
  }

  /** New problems when the document's meaning changed since the last validation, else undefined. */
  private revalidate(nodes: StepNode[], edges: FlowEdge[], extras: WorkflowExtras): CanvasProblem[] | undefined {
    const key = JSON.stringify([nodes.map((n) => [n.id, n.type, n.data]), edges.map((e) => [e.source, e.sourceHandle, e.target]), extras]);
    if (key === this.validatedKey) return undefined;
    this.validatedKey = key;
    return validateCanvas(nodes, edges, this.stopAt, this.now(), extras);
  }

  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  };

  get = () => this.state;

  /**
   * `layoutOnly`: a change of positions the editor made itself (room made under a step measured taller), not an edit:
   * a document that was saved stays saved.
   */
  private set(patch: Partial<EditorState>, layoutOnly = false) {
    const documentChanged = patch.nodes || patch.edges || patch.extras || patch.name !== undefined;
    const problems = documentChanged
      ? this.revalidate(patch.nodes ?? this.state.nodes, patch.edges ?? this.state.edges, patch.extras ?? this.state.extras)
      : undefined;
    const next = { ...this.state, ...patch };
    let dirty = next.dirty;
    if (documentChanged) {
      const key = documentKey(next);
      if (layoutOnly && !this.state.dirty) this.savedKey = key;
      dirty = key !== this.savedKey;
    }
    this.state = {
      ...next,
      ...(problems ? { problems } : {}),
      dirty,
      canUndo: this.past.length > 0,
      canRedo: this.future.length > 0,
      undoLabel: this.past.at(-1)?.label ?? null,
      undoCrossesSave: this.past.length > 0 && this.savedAt >= 0 && this.past.length <= this.savedAt,
      redoLabel: this.future.at(-1)?.label ?? null,
    };
    for (const listener of this.listeners) listener();
  }

  /** Records the current document as an undo step (named `label`) before a change. */
  private checkpoint(label: string, editKey: string | null = null) {
    const now = Date.now();
    if (editKey !== null && editKey === this.lastEditKey && now - this.lastEditAt < COALESCE_MS) {
      this.lastEditAt = now;
      return;
    }
    this.lastEditKey = editKey;
    this.lastEditAt = now;
    // an edit after undoing past the save: the saved document is no longer a number of undo steps away
    if (this.past.length < this.savedAt) this.savedAt = -1;
    const kept = this.past.slice(-HISTORY_LIMIT + 1);
    if (this.savedAt >= 0) this.savedAt -= this.past.length - kept.length;
    this.past = [...kept, { ...this.snapshot(), label }];
    this.future = [];
    this.state = { ...this.state, undone: null };
  }

  private snapshot(): Snapshot {
    return { nodes: this.state.nodes, edges: this.state.edges, extras: this.state.extras };
  }

  private change(label: string, nodes: StepNode[], edges: FlowEdge[], editKey: string | null = null, extra: Partial<EditorState> = {}) {
    this.checkpoint(label, editKey);
    this.set({ nodes, edges, ...extra });
  }

  undo = () => {
    const previous = this.past.pop();
    if (!previous) return;
    const { label, ...document } = previous;
    const crossesSave = this.savedAt >= 0 && this.past.length < this.savedAt;
    this.future.push({ ...this.snapshot(), label });
    this.lastEditKey = null;
    this.set({ ...document, undone: `Undone: ${label}${crossesSave ? ' (made before the last save: Save to keep the canvas as it is now)' : ''}` });
  };

  redo = () => {
    const next = this.future.pop();
    if (!next) return;
    const { label, ...document } = next;
    this.past.push({ ...this.snapshot(), label });
    this.lastEditKey = null;
    this.set({ ...document, undone: `Redone: ${label}` });
  };

  /** React Flow's own changes: drags, selection, dimension measurements, deletions. */
  onNodesChange = (changes: NodeChange<StepNode>[]) => {
    const selected = changes.find((c) => c.type === 'select' && c.selected);
    const removedSelected = changes.some((c) => c.type === 'remove' && c.id === this.state.selectedId);
    const selectedId = selected?.type === 'select' ? selected.id : removedSelected ? null : this.state.selectedId;
    const dragStep = changes.find((c) => c.type === 'position');
    // a drag is one undo step: the checkpoint is taken as it starts, holding the positions from before
    if (dragStep?.type === 'position' && dragStep.dragging && !this.dragging) {
      this.dragging = true;
      this.checkpoint(`move ${stepsWords(this.namesOf(changes.flatMap((c) => (c.type === 'position' ? [c.id] : []))))}`);
    }
    if (dragStep?.type === 'position' && dragStep.dragging === false) this.dragging = false;
    const removed = changes.flatMap((c) => (c.type === 'remove' ? [c.id] : []));
    if (removed.length) this.checkpoint(`delete ${stepsWords(this.namesOf(removed))}`);
    else if (changes.some((c) => c.type === 'add')) this.checkpoint('add a step');
    const applied = applyNodeChanges(changes, this.state.nodes);
    // a step measured taller (its count, a problems line) makes room below it; a layout matter, not an edit to undo
    const nodes = changes.some((c) => c.type === 'dimensions') && !this.dragging ? makeRoom(applied, this.state.edges) : applied;
    const edits = changes.some((c) => c.type === 'remove' || c.type === 'add' || c.type === 'position');
    this.set({ nodes, selectedId }, !edits);
  };

  onEdgesChange = (changes: EdgeChange<FlowEdge>[]) => {
    const edges = applyEdgeChanges(changes, this.state.edges);
    if (changes.some((c) => c.type === 'remove' || c.type === 'add')) this.change('remove a connection', this.state.nodes, edges);
    else this.set({ edges });
  };

  /** One edge per output handle: connecting a handle again moves its edge. */
  connect = (connection: Connection) => {
    const handle = connection.sourceHandle ?? 'next';
    const edges = this.state.edges.filter((e) => !(e.source === connection.source && (e.sourceHandle ?? 'next') === handle));
    const [from, to] = this.namesOf([connection.source, connection.target]);
    this.change(`connect ${quoted(from)} to ${quoted(to)}`, this.state.nodes, [...edges, makeEdge(connection.source, handle, connection.target)]);
  };

  /** Adds a step (of a kind, or a palette preset) at `position`, or the nearest free spot to it: a new step never lands on another. */
  addNode = (kind: CanvasKind | Preset, position: XYPosition, from?: { nodeId: string; handle: string }): string => {
    const id = `node-${Math.random().toString(36).slice(2, 10)}`;
    const node = {
      id,
      type: typeof kind === 'string' ? kind : kind.kind,
      position: freeSpot(this.state.nodes, position),
      data: typeof kind === 'string' ? defaultData(kind, freeName(this.state.nodes, kind)) : kind.data(freeName(this.state.nodes, kind.baseName)),
      selected: true,
    } as StepNode;
    const nodes = [...this.state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n)), node];
    const edges = from
      ? [...this.state.edges.filter((e) => !(e.source === from.nodeId && e.sourceHandle === from.handle)), makeEdge(from.nodeId, from.handle, id)]
      : this.state.edges;
    this.change(`add ${stepsWords([node.data.name])}`, nodes, edges, null, { selectedId: id });
    return id;
  };

  /** "+" under an output: a new step below that output (or beside, if taken), connected to it. */
  addAfter = (kind: CanvasKind, nodeId: string, handle: string): string | null => {
    const source = this.state.nodes.find((n) => n.id === nodeId);
    if (!source) return null;
    const handles = outputHandles(source);
    const index = Math.max(
      0,
      handles.findIndex((h) => h.id === handle),
    );
    const width = source.measured?.width ?? NODE_WIDTH;
    const height = source.measured?.height ?? NODE_HEIGHT;
    const x = source.position.x + (width * (index + 1)) / (handles.length + 1) - NODE_WIDTH / 2;
    return this.addNode(kind, { x, y: source.position.y + height + 70 }, { nodeId, handle });
  };

  /** Changes a node's data; `field` groups keystrokes into one undo step. Handles removed from a branch/split (a branch's timeout too) drop their edges. */
  updateData = (id: string, patch: Partial<StepData>, field: string) => {
    const nodes = this.state.nodes.map((n) => (n.id === id ? ({ ...n, data: { ...n.data, ...patch } } as StepNode) : n));
    const node = nodes.find((n) => n.id === id);
    let edges = this.state.edges;
    if (node?.type === 'branch' || node?.type === 'split') {
      const count = node.type === 'branch' ? node.data.branches.length : node.data.paths.length;
      const prefix = node.type === 'branch' ? 'branch-' : 'path-';
      const timeout = node.type === 'branch' && node.data.timeout !== undefined;
      edges = edges.filter((e) => e.source !== id || (e.sourceHandle === 'timeout' ? timeout : Number((e.sourceHandle ?? '').slice(prefix.length)) < count));
    }
    const before = this.state.nodes.find((n) => n.id === id)?.data.name ?? '';
    this.change(fieldEditWords(field, before), nodes, edges, `${id}:${field}`);
  };

  /** Changes a node's kind in place (e.g. exit ↔ direct) keeping name and actions. */
  setKind = (id: string, kind: CanvasKind) => {
    const nodes = this.state.nodes.map((n) => {
      if (n.id !== id) return n;
      const { name, enterAction, leaveAction, ttl, label, note } = n.data;
      return { ...n, type: kind, data: { ...defaultData(kind, name), enterAction, leaveAction, ttl, label, note } } as StepNode;
    });
    this.change(
      `make ${stepsWords(this.namesOf([id]))} ${kind === 'exit' ? 'an exit' : `a ${kind}`} step`,
      nodes,
      this.state.edges.filter((e) => e.source !== id),
    );
  };

  select = (id: string | null) => this.set({ selectedId: id, nodes: this.state.nodes.map((n) => ({ ...n, selected: n.id === id })) });

  /** The entry step is the first step of the definition. */
  makeEntry = (id: string) => {
    const node = this.state.nodes.find((n) => n.id === id);
    if (!node) return;
    this.change(`make ${quoted(node.data.name)} the entry step`, [node, ...this.state.nodes.filter((n) => n.id !== id)], this.state.edges);
  };

  /** The steps an edit of the selection acts on (deleted, copied). */
  selectedSteps = (): StepNode[] => this.state.nodes.filter((n) => n.selected || n.id === this.state.selectedId);

  deleteSelected = () => {
    const doomed = new Set(this.selectedSteps().map((n) => n.id));
    const selectedEdges = new Set(this.state.edges.filter((e) => e.selected).map((e) => e.id));
    if (doomed.size === 0 && selectedEdges.size === 0) return;
    this.change(
      doomed.size
        ? `delete ${stepsWords(this.namesOf([...doomed]))}`
        : `delete ${selectedEdges.size === 1 ? 'a connection' : `${selectedEdges.size} connections`}`,
      this.state.nodes.filter((n) => !doomed.has(n.id)),
      this.state.edges.filter((e) => !doomed.has(e.source) && !doomed.has(e.target) && !selectedEdges.has(e.id)),
      null,
      { selectedId: null },
    );
  };

  copy = () => {
    const nodes = this.selectedSteps();
    const ids = new Set(nodes.map((n) => n.id));
    this.clipboard = { nodes, edges: this.state.edges.filter((e) => ids.has(e.source) && ids.has(e.target)) };
  };

  /** Pastes the copied steps offset from the originals, with fresh ids and free names; edges between them come along. */
  paste = () => {
    if (!this.clipboard || this.clipboard.nodes.length === 0) return;
    const idMap = new Map<string, string>();
    let all = this.state.nodes.map((n) => (n.selected ? { ...n, selected: false } : n));
    for (const node of this.clipboard.nodes) {
      const id = `node-${Math.random().toString(36).slice(2, 10)}`;
      idMap.set(node.id, id);
      const taken = new Set(all.map((n) => n.data.name));
      let name = `${node.data.name}_copy`;
      for (let i = 2; taken.has(name); i++) name = `${node.data.name}_copy${i}`;
      const position = freeSpot(all, { x: node.position.x + 40, y: node.position.y + 40 });
      all = [...all, { ...node, id, selected: true, measured: undefined, position, data: { ...node.data, name } } as StepNode];
    }
    const edges = this.clipboard.edges.map((e) => makeEdge(idMap.get(e.source)!, e.sourceHandle ?? 'next', idMap.get(e.target)!));
    const pasted = this.clipboard.nodes.length;
    this.change(`paste ${pasted === 1 ? 'a step' : `${pasted} steps`}`, all, [...this.state.edges, ...edges], null, {
      selectedId: idMap.get(this.clipboard.nodes[0].id) ?? null,
    });
  };

  autoLayout = () => this.change('auto-layout', layout(this.state.nodes, this.state.edges), this.state.edges);

  /** The server's verdict on a save (the same validator, so normally what the canvas already shows). */
  setServerProblems = (problems: WorkflowProblem[]) => this.set({ problems: describeProblems(this.state.nodes, problems) });

  setName = (name: string) => this.set({ name });

  /** Sets or removes (a field set to undefined) the workflow's event-triggered entry or goal. */
  setExtras = (patch: WorkflowExtras) => {
    const extras = { ...this.state.extras, ...patch };
    for (const key of ['entry', 'goal', 'exit', 'holdout', 'quietHours'] as const) if (extras[key] === undefined) delete extras[key];
    // Typing an event type or a goal is one undo step, like typing in a step's field.
    this.checkpoint(`change the journey's ${Object.keys(patch).join(' and ')}`, `extras:${Object.keys(patch).join(',')}`);
    this.set({ extras });
  };

  /** Replaces the whole document (a recovered local draft) as one undoable, unsaved edit. */
  replaceDocument = (
    nodes: StepNode[],
    edges: FlowEdge[],
    name = this.state.name,
    extras = this.state.extras,
    label = 'restore the changes kept in this browser',
  ) => this.change(label, nodes, edges, null, { selectedId: null, name, extras });

  /** The document as it is now was saved: `dirty` compares with it from now on, and undo knows where the save was. */
  markSaved = () => {
    this.savedKey = documentKey(this.state);
    this.savedAt = this.past.length;
    this.set({ dirty: false });
  };

  /** Step names of node ids, in their order. */
  private namesOf(ids: string[]): string[] {
    return ids.map((id) => this.state.nodes.find((n) => n.id === id)?.data.name ?? id);
  }
}

/**
 * What a save keeps of the editor's document: the name, each step's kind, place and fields, the connections, the
 * journey's entry and goal. Not what only the view holds (selection, measured sizes).
 */
function documentKey(state: Pick<EditorState, 'name' | 'nodes' | 'edges' | 'extras'>): string {
  return JSON.stringify([
    state.name,
    state.nodes.map((n) => [n.id, n.type, Math.round(n.position.x), Math.round(n.position.y), n.data]),
    state.edges.map((e) => [e.source, e.sourceHandle ?? null, e.target]).sort(),
    state.extras,
  ]);
}

export const EditorContext = createContext<EditorStore | null>(null);

export function useEditorStore(): EditorStore {
  const store = useContext(EditorContext);
  if (!store) throw new Error('useEditorStore needs an <EditorContext.Provider>');
  return store;
}

/** Reads one slice of the editor state; re-renders only when that slice changes (by reference). */
export function useEditor<T>(selector: (state: EditorState) => T): T {
  const store = useEditorStore();
  return useSyncExternalStore(
    store.subscribe,
    () => selector(store.get()),
    () => selector(store.get()),
  );
}
