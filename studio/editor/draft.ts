'use client';
import type { FlowEdge, StepNode, WorkflowExtras } from '../convert';
import type { EditorStore } from './store';

// A local copy of unsaved edits, kept in this browser while the marketer works, so a crash, a reload or
// a "leave anyway" loses nothing: the editor offers it back the next time the workflow opens.

/** `extras`: the entry trigger and goal (absent in drafts kept before they were). */
export type LocalDraft = { version: number; name: string; savedAt: number; nodes: StepNode[]; edges: FlowEdge[]; extras?: WorkflowExtras };

const keyOf = (tenant: string, workflowId: string) => `crowdflow:draft:${tenant}:${workflowId}`;
const WRITE_DELAY_MS = 300;

export function readLocalDraft(tenant: string, workflowId: string): LocalDraft | null {
  try {
    const text = window.localStorage.getItem(keyOf(tenant, workflowId));
    const draft = text ? (JSON.parse(text) as LocalDraft) : null;
    return draft && Array.isArray(draft.nodes) && Array.isArray(draft.edges) ? draft : null;
  } catch {
    return null;
  }
}

export function clearLocalDraft(tenant: string, workflowId: string) {
  try {
    window.localStorage.removeItem(keyOf(tenant, workflowId));
  } catch {
    // storage unavailable (private mode): nothing was kept
  }
}

/** Only what the document is: no selection, no measured sizes. */
function documentOf(store: EditorStore, version: number): LocalDraft {
  const { nodes, edges, name, extras } = store.get();
  return {
    version,
    name,
    savedAt: Date.now(),
    nodes: nodes.map(({ id, type, position, data }) => ({ id, type, position, data }) as StepNode),
    edges: edges.map(({ id, source, sourceHandle, target, type }) => ({ id, source, sourceHandle, target, type })),
    extras,
  };
}

/** Keeps the store's unsaved document in localStorage (shortly after each edit) until it is saved. */
export function keepLocalDraft(store: EditorStore, tenant: string, workflowId: string, version: () => number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let last = store.get();
  const write = () => {
    timer = undefined;
    if (!store.get().dirty) return;
    try {
      window.localStorage.setItem(keyOf(tenant, workflowId), JSON.stringify(documentOf(store, version())));
    } catch {
      // storage full or unavailable: the leave guard still protects the edits
    }
  };
  const unsubscribe = store.subscribe(() => {
    const state = store.get();
    if (state.nodes === last.nodes && state.edges === last.edges && state.name === last.name && state.extras === last.extras) return;
    const wasDirty = last.dirty;
    last = state;
    if (state.dirty && timer === undefined) timer = setTimeout(write, WRITE_DELAY_MS);
    // every edit undone: the copy kept in this browser would only offer the saved version back
    if (wasDirty && !state.dirty) {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      clearLocalDraft(tenant, workflowId);
    }
  });
  return () => {
    unsubscribe();
    if (timer !== undefined) {
      clearTimeout(timer);
      write();
    }
  };
}
