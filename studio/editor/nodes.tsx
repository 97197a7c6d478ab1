'use client';
import { BaseEdge, EdgeLabelRenderer, getSmoothStepPath, Handle, Position, type EdgeProps, type NodeProps } from '@xyflow/react';
import { memo, useEffect, useRef, useState } from 'react';
import { createPortal } from 'react-dom';
import { describeCron } from '../../core/model/cron';
import { CANVAS_KINDS, NODE_WIDTH, outputHandles, type CanvasKind, type FlowEdge, type StepNode } from '../convert';
import { BranchRouting } from './branch-routing';
import { formatCount, formatShare } from '../ui';
import { useCanvasInfo, useCounts } from './context';
import { webhookOf } from './inspector-actions';
import { problemText } from './problem-words';
import { StepSparkline } from './counts-chart';
import { StepExited } from './exit-criteria';
import { StepConverted } from './goal-result';
import { useReveal } from './reveal';
import { StepMenu } from './step-menu';
import { useEditor, useEditorStore } from './store';
import { useUserPath } from './user-path';

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
    case 'branch': {
      const { branches, timeout } = node.data;
      const after = timeout?.after.trim() || '…';
      // one rule and a timeout is a wait: say what for, in the words its edge uses
      if (branches.length === 1 && timeout) return `waits up to ${after} for ${outputHandles(node)[0].label}`;
      return `${branches.length} condition${branches.length === 1 ? '' : 's'}${timeout ? ` · else after ${after}` : ''}`;
    }
    case 'timer':
      return describeCron(node.data.cron, node.data.tz, node.data.tzFromProfile) + (node.data.condition ? ' · if condition' : '');
    case 'delay':
      return `after ${node.data.after}`;
    case 'split': {
      const shares = node.data.paths.map((p) => `${p.percent}%`).join(' / ');
      const experiment = node.data.experiment;
      return experiment ? `${shares} · ${experiment.winner ? `“${experiment.winner.path}” won` : 'experiment'}` : shares;
    }
    case 'parallel':
      return node.data.actions.join(', ') || 'no actions';
    case 'exit':
      return 'users end here';
    default:
      return 'moves on at once';
  }
}

const MENU_HEIGHT = 250;

/** "+" under a free output: pick a kind, get a new connected step below. The menu floats above the canvas (minimap, other steps). */
function AddAfter({ nodeId, handle, label }: { nodeId: string; handle: string; label?: string }) {
  const store = useEditorStore();
  const reveal = useReveal();
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  const [at, setAt] = useState<{ left: number; top: number } | null>(null);
  useEffect(() => {
    if (!at) return;
    const close = (event: Event) => {
      if (
        event instanceof KeyboardEvent
          ? event.key === 'Escape'
          : !menu.current?.contains(event.target as Node) && !button.current?.contains(event.target as Node)
      )
        setAt(null);
    };
    document.addEventListener('pointerdown', close, true);
    document.addEventListener('keydown', close);
    menu.current?.querySelector('button')?.focus();
    return () => {
      document.removeEventListener('pointerdown', close, true);
      document.removeEventListener('keydown', close);
    };
  }, [at]);
  const toggle = () => {
    const box = button.current?.getBoundingClientRect();
    if (at || !box) return setAt(null);
    setAt({ left: box.left, top: box.bottom + MENU_HEIGHT > window.innerHeight ? box.top - MENU_HEIGHT - 4 : box.bottom + 4 });
  };
  return (
    <div className="add-after nodrag">
      <button
        ref={button}
        type="button"
        className="plus"
        aria-label={label ? `Add a step after “${label}”` : 'Add a next step'}
        aria-haspopup="menu"
        aria-expanded={at !== null}
        data-testid={`add-after-${handle}`}
        onClick={toggle}
      >
        +
      </button>
      {at &&
        createPortal(
          <div
            ref={menu}
            className="menu floating-menu"
            role="menu"
            aria-label="Kind of the new step"
            style={{ left: at.left, top: at.top }}
            data-testid="add-menu"
          >
            {CANVAS_KINDS.map((kind) => (
              <button
                key={kind}
                type="button"
                role="menuitem"
                onClick={() => {
                  setAt(null);
                  const id = store.addAfter(kind, nodeId, handle);
                  const added = store.get().nodes.find((n) => n.id === id);
                  if (added) reveal(added.position);
                }}
              >
                {KIND_ICON[kind]} {KIND_LABEL[kind]}
              </button>
            ))}
          </div>,
          document.body,
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
  const warnings = info.warnings.filter((w) => w.step === props.data.name);
  const handles = outputHandles(node);
  const count = counts?.steps[props.data.name];
  const share = counts && counts.total > 0 && count !== undefined ? formatShare(count, counts.total) : null;
  const kind = props.type as CanvasKind;
  const onPath = useUserPath()?.steps.get(props.data.name);
  return (
    <div
      className={`step step-${kind}${props.selected ? ' selected' : ''}${mine.length ? ' has-problems' : ''}${onPath ? ` path-${onPath}` : ''}`}
      data-testid="step-node"
      data-step={props.data.name}
      data-path={onPath}
    >
      <Handle type="target" position={Position.Top} className="handle-in" />
      <header>
        <span className="kind-icon" aria-hidden>
          {KIND_ICON[kind]}
        </span>
        <span className="step-name">{props.data.name}</span>
        {props.data.note && (
          <span className="note-mark" title={props.data.note} role="img" aria-label={`Note: ${props.data.note}`} data-testid="step-note">
            ✎
          </span>
        )}
        {isEntry && <span className="entry-badge">entry</span>}
        {info.countsKey && <StepMenu stepName={props.data.name} />}
      </header>
      {props.data.label && (
        <div className="step-label" data-testid="step-label" title={props.data.label}>
          {props.data.label}
        </div>
      )}
      <div className="step-summary">{summary(node)}</div>
      {node.type === 'branch' && <BranchRouting conditions={node.data.branches.map((branch) => branch.condition)} />}
      {webhookOf(props.data.enterAction) !== null && (
        <div className="step-webhook" data-testid="step-webhook" title="The users who enter this step are sent to this webhook">
          ⇢ webhook “{webhookOf(props.data.enterAction)}”
        </div>
      )}
      {counts?.capped?.[props.data.name] && (
        <div
          className="step-webhook step-capped"
          data-testid="step-capped"
          title="Users a frequency cap kept from this step's webhook: they moved on as usual, the message was skipped"
        >
          ⊘ {formatCount(counts.capped[props.data.name].users)} capped here
        </div>
      )}
      <QuietCounts quiet={counts?.quiet?.[props.data.name]} />
      {mine.length > 0 && (
        <div className="step-problems" data-testid="step-problems" title={mine.map((p) => p.text).join('\n')}>
          {mine.length > 1 && <strong className="problem-count">{mine.length} problems · </strong>}
          {mine[0].text}
        </div>
      )}
      {warnings.length > 0 && (
        <div className="step-warnings" data-testid="step-warnings" title={warnings.map((w) => problemText(w, node)).join('\n')}>
          ⚠ {problemText(warnings[0], node)}
        </div>
      )}
      {info.countsKey && (
        <div className="step-count" data-testid="step-count" data-count={count ?? 0}>
          <div className="step-count-line">
            <span>
              <strong>{formatCount(count ?? 0)}</strong>
              <span className="muted">{share === null ? '' : ` · ${share}`}</span>
            </span>
            <StepConverted step={props.data.name} />
            <StepExited step={props.data.name} />
          </div>
          <StepSparkline step={props.data.name} />
        </div>
      )}
      <div className="outputs">
        {handles.map((h, i) => {
          const left = `${((i + 1) / (handles.length + 1)) * 100}%`;
          const used = connected.some((e) => e.source === props.id && (e.sourceHandle ?? 'next') === h.id);
          return (
            <div key={h.id} className="output" style={{ left }}>
              {h.label && !used && (
                <span className="handle-label" title={h.title} style={{ maxWidth: NODE_WIDTH / (handles.length + 1) - 4 }}>
                  {h.label}
                </span>
              )}
              <Handle
                type="source"
                position={Position.Bottom}
                id={h.id}
                className={used ? 'handle-out' : 'handle-out free'}
                style={{ left: '50%' }}
                data-testid={`handle-${h.id}`}
              />
              {!used && !info.readOnly && <AddAfter nodeId={props.id} handle={h.id} label={h.label} />}
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

/** The output an edge leaves from, with its label ("plan = pro", "else", "50%"); no label for a single output. */
function outputOf(source: StepNode | undefined, handle: string | null | undefined): { label?: string; title?: string } {
  return (source ? outputHandles(source).find((h) => h.id === (handle ?? 'next')) : undefined) ?? {};
}

/** Room between the turn of an edge and the step it enters, kept clear above that step for the label (px). */
const LABEL_HALF_HEIGHT = 10;

/**
 * Where an edge turns sideways. Outputs of one step turn at different heights, ordered so that none
 * crosses another: edges heading left turn from the leftmost output down, edges heading right from the
 * rightmost. A single output turns halfway, as React Flow would.
 */
function turnHeight(source: StepNode | undefined, edge: EdgeProps<FlowEdge>): number | undefined {
  const handles = source ? outputHandles(source) : [];
  if (handles.length < 2) return undefined;
  const index = handles.findIndex((h) => h.id === edge.sourceHandleId);
  const level = edge.targetX < edge.sourceX ? index : handles.length - 1 - index;
  return Math.min(edge.sourceY + 18 + level * 12, (edge.sourceY + edge.targetY) / 2 + level * 6);
}

function StepEdgeView(props: EdgeProps<FlowEdge>) {
  const counts = useCounts();
  const source = useEditor((s) => s.nodes.find((n) => n.id === props.source));
  const targetName = useEditor((s) => s.nodes.find((n) => n.id === props.target)?.data.name);
  // The outputs of the source that lead to this edge's step, one per line (a string: equal when unchanged, so no re-render).
  const pairHandles = useEditor((s) =>
    s.edges
      .filter((e) => e.source === props.source && e.target === props.target)
      .map((e) => e.sourceHandle ?? 'next')
      .join('\n'),
  );
  const firstOfPair = pairHandles.split('\n')[0] === (props.sourceHandleId ?? 'next');
  const centerY = turnHeight(source, props);
  const userPath = useUserPath();
  const onPath = userPath?.edges.has(`${source?.data.name}->${targetName}`) ?? false;
  const edgeStyle = onPath
    ? userPath?.kind === 'preview'
      ? { stroke: 'var(--accent)', strokeWidth: 3, strokeDasharray: '6 4' }
      : { stroke: 'var(--warn)', strokeWidth: 3 }
    : props.selected
      ? { stroke: 'var(--accent)', strokeWidth: 2 }
      : undefined;
  const [path, labelX, labelY] = getSmoothStepPath({ ...props, borderRadius: 12, centerY });
  // Counts are per step pair, and two outputs into the same step would draw their labels on one spot: the first edge of
  // the pair carries them all ("plan = pro or else") and the one number; the others are bare lines.
  const outputs = firstOfPair ? pairHandles.split('\n').map((handle) => outputOf(source, handle)) : [];
  const named = outputs.filter((output) => output.label !== undefined);
  const label = named.length > 0 ? named.map((output) => output.label).join(' or ') : undefined;
  const title = named.some((output) => output.title) ? named.map((output) => output.title ?? output.label).join(' or ') : undefined;
  const taken = source && targetName && firstOfPair ? counts?.edges[`${source.data.name}->${targetName}`] : undefined;
  if (label === undefined && taken === undefined) return <BaseEdge id={props.id} path={path} markerEnd={props.markerEnd} style={edgeStyle} />;
  // An output's label sits on the last stretch of its edge, just below where it turns towards its step: each output
  // of a step turns towards a different step, so the labels stand apart, under the gap between the steps rather
  // than over either one (at the outputs themselves, 55 px apart, a condition's words overlapped).
  const downwards = label !== undefined && centerY !== undefined && props.targetY > props.sourceY;
  const [x, y] = downwards
    ? [props.targetX, Math.max(props.sourceY + LABEL_HALF_HEIGHT, Math.min(centerY + LABEL_HALF_HEIGHT + 2, props.targetY - LABEL_HALF_HEIGHT - 2))]
    : [labelX, labelY];
  return (
    <>
      <BaseEdge id={props.id} path={path} markerEnd={props.markerEnd} style={edgeStyle} />
      <EdgeLabelRenderer>
        <div
          className="edge-count"
          style={{ transform: `translate(-50%, -50%) translate(${x}px, ${y}px)` }}
          title={title}
          data-testid="edge-label"
          data-output={label ?? ''}
        >
          {label && <span className="edge-output">{label}</span>}
          {taken !== undefined && (
            <span data-testid="edge-count" className="edge-taken">
              {formatCount(taken)}
            </span>
          )}
        </div>
      </EdgeLabelRenderer>
    </>
  );
}

export const edgeTypes = { step: memo(StepEdgeView) };

/** What quiet hours did to the step's webhook: users waiting for the window to open in their zone, deliveries dropped. */
function QuietCounts({ quiet }: { quiet: { waiting: number; dropped: number } | undefined }) {
  if (!quiet || (quiet.waiting === 0 && quiet.dropped === 0)) return null;
  return (
    <div
      className="step-webhook step-quiet"
      data-testid="step-quiet"
      title="Users who entered this step during quiet hours in their own zone: they moved on as usual, the webhook waits until the hours end there (or was dropped)"
    >
      ☾ {quiet.waiting > 0 && `${formatCount(quiet.waiting)} waiting for quiet hours`}
      {quiet.waiting > 0 && quiet.dropped > 0 && ' · '}
      {quiet.dropped > 0 && `${formatCount(quiet.dropped)} dropped (quiet hours)`}
    </div>
  );
}
