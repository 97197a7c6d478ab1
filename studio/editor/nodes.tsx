'use client';
import { BaseEdge, EdgeLabelRenderer, getSmoothStepPath, Handle, Position, useReactFlow, type EdgeProps, type NodeProps } from '@xyflow/react';
import { memo, useState } from 'react';
import { describeCron } from '../../server/model/cron';
import { CANVAS_KINDS, NODE_HEIGHT, outputHandles, type CanvasKind, type FlowEdge, type StepNode } from '../convert';
import { formatCount } from '../ui';
import { useCanvasInfo, useCounts } from './context';
import { StepMenu } from './step-menu';
import { useEditor, useEditorStore } from './store';

export const KIND_LABEL: Record<CanvasKind, string> = {
  direct: 'Direct',
  branch: 'Branch',
  timer: 'Timer',
  delay: 'Delay',
  split: 'Split',
  parallel: 'Parallel',
  exit: 'Exit',
};

export const KIND_ICON: Record<CanvasKind, string> = { direct: '→', branch: '◇', timer: '◷', delay: '◔', split: '⋔', parallel: '⇉', exit: '■' };

function summary(node: StepNode): string {
  switch (node.type) {
    case 'branch':
      return `${node.data.branches.length} conditions`;
    case 'timer':
      return describeCron(node.data.cron) + (node.data.condition ? ' · if condition' : '');
    case 'delay':
      return `after ${node.data.after}`;
    case 'split':
      return node.data.paths.map((p) => `${p.percent}%`).join(' / ');
    case 'parallel':
      return node.data.actions.join(', ') || 'no actions';
    case 'exit':
      return 'users end here';
    default:
      return 'moves on at once';
  }
}

/** "+" under a free output: pick a kind, get a new connected step below. */
function AddAfter({ nodeId, handle, position }: { nodeId: string; handle: string; position: { x: number; y: number } }) {
  const store = useEditorStore();
  const [open, setOpen] = useState(false);
  return (
    <div className="add-after nodrag">
      <button type="button" className="plus" aria-label={`Add a step after ${handle}`} data-testid={`add-after-${handle}`} onClick={() => setOpen(!open)}>
        +
      </button>
      {open && (
        <div className="menu" role="menu">
          {CANVAS_KINDS.map((kind) => (
            <button
              key={kind}
              type="button"
              role="menuitem"
              onClick={() => {
                setOpen(false);
                store.addNode(kind, { x: position.x, y: position.y + NODE_HEIGHT + 60 }, { nodeId, handle });
              }}
            >
              {KIND_ICON[kind]} {KIND_LABEL[kind]}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}

function StepNodeView(props: NodeProps<StepNode>) {
  const node = { id: props.id, type: props.type, data: props.data, position: { x: props.positionAbsoluteX, y: props.positionAbsoluteY } } as StepNode;
  const info = useCanvasInfo();
  const counts = useCounts();
  const isEntry = useEditor((s) => s.nodes[0]?.id === props.id);
  const problems = useEditor((s) => s.problems);
  const connected = useEditor((s) => s.edges);
  const mine = problems.filter((p) => p.step === props.data.name);
  const handles = outputHandles(node);
  const count = counts?.steps[props.data.name];
  const share = counts && counts.total > 0 && count !== undefined ? Math.round((count / counts.total) * 1000) / 10 : null;
  const kind = props.type as CanvasKind;
  return (
    <div className={`step step-${kind}${props.selected ? ' selected' : ''}${mine.length ? ' has-problems' : ''}`} data-testid="step-node" data-step={props.data.name}>
      <Handle type="target" position={Position.Top} className="handle-in" />
      <header>
        <span className="kind-icon" aria-hidden>
          {KIND_ICON[kind]}
        </span>
        <span className="step-name">{props.data.name}</span>
        {isEntry && <span className="entry-badge">entry</span>}
        {info.countsKey && <StepMenu stepName={props.data.name} />}
      </header>
      <div className="step-summary">{summary(node)}</div>
      {info.countsKey && (
        <div className="step-count" data-testid="step-count" data-count={count ?? 0}>
          <strong>{formatCount(count ?? 0)}</strong>
          <span className="muted">{share === null ? '' : ` · ${share}%`}</span>
        </div>
      )}
      {mine.length > 0 && (
        <div className="step-problems" data-testid="step-problems" title={mine.map((p) => p.message).join('\n')}>
          {mine[0].message}
          {mine.length > 1 && <strong> (+{mine.length - 1} more)</strong>}
        </div>
      )}
      <div className="outputs">
        {handles.map((h, i) => {
          const left = `${((i + 1) / (handles.length + 1)) * 100}%`;
          const used = connected.some((e) => e.source === props.id && (e.sourceHandle ?? 'next') === h.id);
          return (
            <div key={h.id} className="output" style={{ left }}>
              {h.label && <span className="handle-label">{h.label}</span>}
              <Handle type="source" position={Position.Bottom} id={h.id} className={used ? 'handle-out' : 'handle-out free'} style={{ left: '50%' }} data-testid={`handle-${h.id}`} />
              {!used && !info.readOnly && <AddAfter nodeId={props.id} handle={h.id} position={node.position} />}
            </div>
          );
        })}
      </div>
    </div>
  );
}

const StepNodeMemo = memo(StepNodeView);

/** Module scope, so React Flow never sees a new nodeTypes object. */
export const nodeTypes = Object.fromEntries(CANVAS_KINDS.map((kind) => [kind, StepNodeMemo]));

function StepEdgeView(props: EdgeProps<FlowEdge>) {
  const counts = useCounts();
  const { getNode, getEdges } = useReactFlow<StepNode, FlowEdge>();
  const [path, labelX, labelY] = getSmoothStepPath({ ...props, borderRadius: 12 });
  const source = getNode(props.source);
  const target = getNode(props.target);
  // counts are per step pair: two outputs into the same step share one number, drawn on the first of them
  const firstOfPair = getEdges().find((e) => e.source === props.source && e.target === props.target)?.id === props.id;
  const taken = source && target && firstOfPair ? counts?.edges[`${source.data.name}->${target.data.name}`] : undefined;
  return (
    <>
      <BaseEdge id={props.id} path={path} markerEnd={props.markerEnd} style={props.selected ? { stroke: 'var(--accent)', strokeWidth: 2 } : undefined} />
      {taken !== undefined && (
        <EdgeLabelRenderer>
          <div className="edge-count" style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }} data-testid="edge-count">
            {formatCount(taken)}
          </div>
        </EdgeLabelRenderer>
      )}
    </>
  );
}

export const edgeTypes = { step: memo(StepEdgeView) };
