// Canvas ↔ definition. The canvas holds one node per step (typed by kind, data = the step's own fields)
// and one edge per connected output handle; the definition holds steps whose `next` fields name other
// steps. Node ids are stable across renames, so edges survive a step being renamed. Positions go to
// the draft, never into the runnable definition. The first node is the entry step.
import dagre from '@dagrejs/dagre';
import type { Edge, Node } from '@xyflow/react';
import type { Step, WorkflowDefinition, WorkflowDraft, WorkflowProblem } from '../core/model/workflow';
import { conditionSummary, truncate } from './rules';

type StepOf<K extends Step['kind']> = Extract<Step, { kind: K }>;
/**
 * A node's data: its step's own fields from the shared schema, without the kind (the node type) and the
 * targets (edges), plus its label and note: canvas-only text kept in the draft, never in the runnable definition.
 */
type Own<K extends Step['kind'], Without extends string = never> = Omit<StepOf<K>, 'kind' | 'next' | Without> & { label?: string; note?: string };
type Common = Own<'direct'>;
export type DirectData = Own<'direct'>;
export type ExitData = Own<'direct'>;
export type BranchData = Own<'branch', 'branches' | 'timeout'> & {
  /** Each branch's condition and its name (canvas only: kept in the draft), drawn on its edge. */
  branches: (Omit<StepOf<'branch'>['branches'][number], 'next'> & { label?: string })[];
  /** The timeout's target is the edge from the `timeout` handle. */
  timeout?: { after: string };
};
export type TimerData = Own<'timer'>;
export type DelayData = Own<'delay'>;
export type SplitData = Own<'split', 'paths'> & { paths: Omit<StepOf<'split'>['paths'][number], 'next'>[] };
export type ParallelData = Own<'parallel'>;

export type StepNode =
  | Node<DirectData, 'direct'>
  | Node<ExitData, 'exit'>
  | Node<BranchData, 'branch'>
  | Node<TimerData, 'timer'>
  | Node<DelayData, 'delay'>
  | Node<SplitData, 'split'>
  | Node<ParallelData, 'parallel'>;
export type CanvasKind = NonNullable<StepNode['type']>;
export type StepData = StepNode['data'];
export type FlowEdge = Edge<{ label?: string }>;

export const CANVAS_KINDS: CanvasKind[] = ['direct', 'branch', 'timer', 'delay', 'split', 'parallel', 'exit'];
export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 96;

/** Fresh data for a step dropped from the palette. */
export function defaultData(kind: CanvasKind, name: string): StepData {
  switch (kind) {
    case 'direct':
    case 'exit':
      return { name };
    case 'branch':
      return { name, branches: [{ condition: 'event.type == "purchase"' }, { condition: 'true' }] };
    case 'timer':
      return { name, cron: '0 0 9 * * *' };
    case 'delay':
      return { name, after: '1d' };
    case 'split':
      return { name, paths: [{ percent: 50 }, { percent: 50 }] };
    case 'parallel':
      return { name, actions: ['email', 'push'] };
  }
}

/** A ready-made step of the palette: a kind with data set up for one common use. */
export type Preset = { id: string; kind: CanvasKind; label: string; icon: string; baseName: string; data: (name: string) => StepData };

export const PRESETS: Preset[] = [
  {
    // One event rule and a timeout, and no `else`: an else (always true) would move every user on their first event
    // of any type, so nobody would wait for the one that matters.
    id: 'wait-for-event',
    kind: 'branch',
    label: 'Wait for event',
    icon: '◈',
    baseName: 'wait_for_event',
    data: (name) => ({ name, branches: [{ condition: 'event.type == "purchase"' }], timeout: { after: '2d' } }),
  },
];

/** Room for a branch's label on its edge (characters): an edge label stays narrower than the steps it joins. */
const BRANCH_LABEL_CHARS = 26;

/** What a branch's edge says: its name, else its condition in a few words (`plan = pro`), else its place. */
export function branchLabel(branch: BranchData['branches'][number], index: number): { label: string; title?: string } {
  const name = branch.label?.trim();
  const condition = branch.condition.trim();
  const said = name || (condition ? conditionSummary(condition) : `if ${index + 1}`);
  const title = name && condition ? `${name}: ${condition}` : condition && condition !== 'true' ? condition : undefined;
  return { label: truncate(said, BRANCH_LABEL_CHARS), ...(title && title !== said ? { title } : {}) };
}

/**
 * The output handles of a node, in the order the step tries them, with the label drawn beside each (and its
 * full text, when the label is shortened or names the condition).
 */
export function outputHandles(node: StepNode): { id: string; label?: string; title?: string }[] {
  switch (node.type) {
    case 'exit':
      return [];
    case 'branch':
      return [
        ...node.data.branches.map((b, i) => ({ id: `branch-${i}`, ...branchLabel(b, i) })),
        // a timeout whose duration is still being typed is "timeout", not "after "
        ...(node.data.timeout ? [{ id: 'timeout', label: node.data.timeout.after.trim() ? `after ${node.data.timeout.after}` : 'timeout' }] : []),
      ];
    case 'split':
      return node.data.paths.map((p, i) => ({ id: `path-${i}`, label: `${p.percent}%` }));
    default:
      return [{ id: 'next' }];
  }
}

const edgeId = (source: string, handle: string) => `${source}:${handle}`;

export function makeEdge(source: string, sourceHandle: string, target: string): FlowEdge {
  return { id: edgeId(source, sourceHandle), source, sourceHandle, target, type: 'step' };
}

function common(step: Step): Common {
  const data: Common = { name: step.name };
  if (step.enterAction !== undefined) data.enterAction = step.enterAction;
  if (step.leaveAction !== undefined) data.leaveAction = step.leaveAction;
  if (step.ttl !== undefined) data.ttl = step.ttl;
  return data;
}

function nodeFor(step: Step, id: string, position: { x: number; y: number }, lone: boolean, branchLabels: string[] = []): StepNode {
  const base = { id, position };
  switch (step.kind) {
    case 'direct':
      // a direct step without next is an exit; a lone entry step is a journey being drawn, so it keeps its output
      return step.next === undefined && !lone ? { ...base, type: 'exit', data: common(step) } : { ...base, type: 'direct', data: common(step) };
    case 'branch': {
      const data: BranchData = {
        ...common(step),
        branches: step.branches.map((b, i) => (branchLabels[i] ? { condition: b.condition, label: branchLabels[i] } : { condition: b.condition })),
      };
      if (step.timeout) data.timeout = { after: step.timeout.after };
      return { ...base, type: 'branch', data };
    }
    case 'timer': {
      const data: TimerData = { ...common(step), cron: step.cron };
      if (step.tz !== undefined) data.tz = step.tz;
      if (step.tzFromProfile !== undefined) data.tzFromProfile = step.tzFromProfile;
      if (step.condition !== undefined) data.condition = step.condition;
      return { ...base, type: 'timer', data };
    }
    case 'delay':
      return { ...base, type: 'delay', data: { ...common(step), after: step.after } };
    case 'split': {
      const data: SplitData = { ...common(step), paths: step.paths.map((p) => ({ percent: p.percent })) };
      if (step.seed !== undefined) data.seed = step.seed;
      if (step.experiment !== undefined) data.experiment = step.experiment;
      return { ...base, type: 'split', data };
    }
    case 'parallel':
      return { ...base, type: 'parallel', data: { ...common(step), actions: [...step.actions] } };
  }
}

/** Targets of a step by output handle id, matching outputHandles(). */
function targetsByHandle(step: Step): [string, string][] {
  switch (step.kind) {
    case 'branch':
      return [
        ...step.branches.map((b, i): [string, string] => [`branch-${i}`, b.next]),
        ...(step.timeout ? [['timeout', step.timeout.next] as [string, string]] : []),
      ];
    case 'split':
      return step.paths.map((p, i) => [`path-${i}`, p.next]);
    default:
      return step.next === undefined ? [] : [['next', step.next]];
  }
}

export const nodeIdFor = (stepName: string) => `step-${stepName}`;

export function definitionToGraph(definition: WorkflowDefinition, draft?: WorkflowDraft | null): { nodes: StepNode[]; edges: FlowEdge[] } {
  const positions = draft?.positions ?? {};
  const labels = draft?.labels ?? {};
  const notes = draft?.notes ?? {};
  const branchLabels = draft?.branchLabels ?? {};
  const missing = definition.steps.some((s) => !positions[s.name]);
  let nodes = definition.steps.map((step) => {
    const node = nodeFor(step, nodeIdFor(step.name), positions[step.name] ?? { x: 0, y: 0 }, definition.steps.length === 1, branchLabels[step.name]);
    const canvasOnly = { ...(labels[step.name] ? { label: labels[step.name] } : {}), ...(notes[step.name] ? { note: notes[step.name] } : {}) };
    return Object.keys(canvasOnly).length ? ({ ...node, data: { ...node.data, ...canvasOnly } } as StepNode) : node;
  });
  const known = new Set(definition.steps.map((s) => s.name));
  // an edge to a step that does not exist cannot be drawn; validation reports that `next` on the source step
  const edges = definition.steps.flatMap((step) =>
    targetsByHandle(step)
      .filter(([, next]) => known.has(next))
      .map(([handle, next]) => makeEdge(nodeIdFor(step.name), handle, nodeIdFor(next))),
  );
  if (missing) nodes = layout(nodes, edges);
  return { nodes, edges };
}

function dataCommon(data: Common): Common {
  const out: Common = { name: data.name };
  if (data.enterAction) out.enterAction = data.enterAction;
  if (data.leaveAction) out.leaveAction = data.leaveAction;
  if (data.ttl) out.ttl = data.ttl;
  return out;
}

/**
 * The definition the canvas describes. An unconnected required output becomes `next: ""`, which
 * validateWorkflow() reports on that step, so the canvas shows the problem where it is.
 */
/** What a definition holds besides its steps and stopAt, edited apart from the canvas (the inspector with no step selected). */
export type WorkflowExtras = Pick<WorkflowDefinition, 'entry' | 'goal' | 'exit' | 'holdout' | 'quietHours'>;

/** A definition's extras, as the editor keeps them. */
export function extrasOf(definition: WorkflowDefinition): WorkflowExtras {
  return { entry: definition.entry, goal: definition.goal, exit: definition.exit, holdout: definition.holdout, quietHours: definition.quietHours };
}

export function graphToDefinition(
  nodes: StepNode[],
  edges: FlowEdge[],
  stopAt?: string,
  extras: WorkflowExtras = {},
): { definition: WorkflowDefinition; draft: WorkflowDraft } {
  const nameOf = new Map(nodes.map((n) => [n.id, n.data.name]));
  const target = (node: StepNode, handle: string): string | undefined => {
    const edge = edges.find((e) => e.source === node.id && (e.sourceHandle ?? 'next') === handle);
    return edge ? nameOf.get(edge.target) : undefined;
  };
  const steps = nodes.map((node): Step => {
    const base = dataCommon(node.data);
    switch (node.type) {
      case 'exit':
        return { ...base, kind: 'direct' };
      case 'direct': {
        const next = target(node, 'next');
        return next === undefined ? { ...base, kind: 'direct' } : { ...base, kind: 'direct', next };
      }
      case 'parallel': {
        const next = target(node, 'next');
        return { ...base, kind: 'parallel', actions: node.data.actions.filter(Boolean), ...(next === undefined ? {} : { next }) };
      }
      case 'branch': {
        const step: Step = {
          ...base,
          kind: 'branch',
          branches: node.data.branches.map((b, i) => ({ condition: b.condition, next: target(node, `branch-${i}`) ?? '' })),
        };
        if (node.data.timeout) step.timeout = { after: node.data.timeout.after, next: target(node, 'timeout') ?? '' };
        return step;
      }
      case 'split': {
        const step: Step = { ...base, kind: 'split', paths: node.data.paths.map((p, i) => ({ percent: p.percent, next: target(node, `path-${i}`) ?? '' })) };
        if (node.data.seed !== undefined) step.seed = node.data.seed;
        if (node.data.experiment !== undefined) step.experiment = node.data.experiment;
        return step;
      }
      case 'timer': {
        const step: Step = { ...base, kind: 'timer', cron: node.data.cron, next: target(node, 'next') ?? '' };
        if (node.data.tz) step.tz = node.data.tz;
        // Kept even empty: "each user's zone" with no attribute yet is a problem to show, not the one-zone timer.
        if (node.data.tzFromProfile !== undefined) step.tzFromProfile = node.data.tzFromProfile;
        if (node.data.condition) step.condition = node.data.condition;
        return step;
      }
      case 'delay':
        return { ...base, kind: 'delay', after: node.data.after, next: target(node, 'next') ?? '' };
    }
  });
  const positions = Object.fromEntries(nodes.map((n) => [n.data.name, { x: Math.round(n.position.x), y: Math.round(n.position.y) }]));
  const labels = Object.fromEntries(nodes.flatMap((n) => (n.data.label?.trim() ? [[n.data.name, n.data.label.trim()]] : [])));
  const notes = Object.fromEntries(nodes.flatMap((n) => (n.data.note?.trim() ? [[n.data.name, n.data.note.trim()]] : [])));
  const branchLabels = Object.fromEntries(
    nodes.flatMap((n) =>
      n.type === 'branch' && n.data.branches.some((b) => b.label?.trim()) ? [[n.data.name, n.data.branches.map((b) => b.label?.trim() ?? '')]] : [],
    ),
  );
  const { entry, goal, exit, holdout, quietHours } = extras;
  return {
    definition: {
      steps,
      ...(entry ? { entry } : {}),
      ...(goal ? { goal } : {}),
      ...(exit ? { exit } : {}),
      ...(holdout ? { holdout } : {}),
      // false (none for this journey) is kept; absent follows the tenant's.
      ...(quietHours !== undefined ? { quietHours } : {}),
      ...(stopAt ? { stopAt } : {}),
    },
    draft: { positions, labels, ...(Object.keys(notes).length ? { notes } : {}), ...(Object.keys(branchLabels).length ? { branchLabels } : {}) },
  };
}

/** Top-to-bottom layered layout (dagre), then each step's targets put left to right in its outputs' order; returns new nodes. */
export function layout(nodes: StepNode[], edges: FlowEdge[]): StepNode[] {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: 'TB', nodesep: 60, ranksep: 90 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) graph.setNode(node.id, { width: node.measured?.width ?? NODE_WIDTH, height: node.measured?.height ?? NODE_HEIGHT });
  for (const edge of edges) graph.setEdge(edge.source, edge.target);
  dagre.layout(graph);
  const centers = new Map(nodes.map((node) => [node.id, { x: graph.node(node.id).x, y: graph.node(node.id).y }]));
  orderTargetsByOutputs(nodes, edges, centers);
  return nodes.map((node) => {
    const placed = centers.get(node.id)!;
    const width = node.measured?.width ?? NODE_WIDTH;
    const height = node.measured?.height ?? NODE_HEIGHT;
    return { ...node, position: { x: Math.round(placed.x - width / 2), y: Math.round(placed.y - height / 2) } };
  });
}

/**
 * dagre orders a rank without knowing that a branch's outputs sit left to right ("if 1" … "else"); its
 * targets on one rank swap places to follow that order, so the edges leave the step without crossing.
 */
function orderTargetsByOutputs(nodes: StepNode[], edges: FlowEdge[], centers: Map<string, { x: number; y: number }>) {
  for (const node of nodes) {
    const handles = outputHandles(node);
    if (handles.length < 2) continue;
    const targets = [...new Set(handles.flatMap((h) => edges.filter((e) => e.source === node.id && (e.sourceHandle ?? 'next') === h.id).map((e) => e.target)))];
    const byRank = new Map<number, string[]>();
    for (const target of targets) {
      if (target === node.id) continue;
      const y = centers.get(target)?.y;
      if (y !== undefined) byRank.set(y, [...(byRank.get(y) ?? []), target]);
    }
    for (const group of byRank.values()) {
      const xs = group.map((id) => centers.get(id)!.x).sort((a, b) => a - b);
      group.forEach((id, i) => (centers.get(id)!.x = xs[i]));
    }
  }
}

/** Step name for a new node: `<base>`, `<base>_2`, … whichever is free (the base is its kind, or a preset's name). */
export function freeName(nodes: StepNode[], base: string): string {
  const taken = new Set(nodes.map((n) => n.data.name));
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}_${i}`)) return `${base}_${i}`;
}

/**
 * validateWorkflow()'s problems as the canvas shows them: an unconnected output reaches the validator as
 * `next: ""` (two technical messages); on the canvas it is one problem naming the output to connect.
 */
export function canvasProblems(nodes: StepNode[], edges: FlowEdge[], problems: WorkflowProblem[]): WorkflowProblem[] {
  const unconnected: WorkflowProblem[] = [];
  for (const node of nodes) {
    if (node.type === 'direct' || node.type === 'parallel' || node.type === 'exit') continue;
    for (const handle of outputHandles(node)) {
      if (!edges.some((e) => e.source === node.id && (e.sourceHandle ?? 'next') === handle.id)) {
        const output = handle.label ? `output “${handle.label}”` : 'its output';
        unconnected.push({ step: node.data.name, code: 'unconnected', message: `Step "${node.data.name}": connect ${output} to the step users go to next` });
      }
    }
  }
  const aboutEmptyNext = (p: WorkflowProblem) => p.message.includes('next points at ""') || p.message.includes('next: Step name');
  return [...unconnected, ...problems.filter((p) => !(unconnected.some((u) => u.step === p.step) && aboutEmptyNext(p)))];
}
