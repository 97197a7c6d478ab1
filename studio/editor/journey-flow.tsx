'use client';
import { useMemo, useState } from 'react';
import { Bar, BarChart, LabelList, Layer, Rectangle, ResponsiveContainer, Sankey, Tooltip, XAxis, YAxis } from 'recharts';
import type { Step } from '../../core/model/workflow';
import { apiGet, tenantPath } from '../api';
import { useQuery } from '../query';
import { Dialog, ErrorBox, formatCount, Loading } from '../ui';
import { useChartColors } from './chart-scale';

// Paths (GET …/paths) as a Sankey of the journey and a funnel (GET …/funnel) as bars, both over a time window of the
// journal, drawn with recharts (already the studio's chart library: its Sankey and BarChart add no dependency).
// A Sankey is a graph without cycles: an edge back to a step on the way to it (a loop) is listed under the view, not
// drawn. Every figure drawn is also in a table, for reading and for screen readers.

type Edge = { from: string | null; to: string; moves: number; users: number };
type Paths = { from: string; to: string; edges: Edge[] };
type FunnelStep = { step: string; users: number; conversion: number | null; ofFirst: number | null };
type Funnel = { from: string; to: string; steps: FunnelStep[] };

/** The node of users entering the instance (edges `from` null). */
const ENTERED = '(entered)';

const WINDOWS = { start: 'since the start', day: 'last 24 hours', hour: 'last hour' } as const;
type WindowName = keyof typeof WINDOWS;
const WINDOW_MS: Record<WindowName, number | null> = { start: null, day: 24 * 3_600_000, hour: 3_600_000 };

function windowQuery(window: WindowName): string {
  const span = WINDOW_MS[window];
  return span === null ? '' : `from=${encodeURIComponent(new Date(Date.now() - span).toISOString())}`;
}

const percent = (share: number | null) => (share === null ? '–' : `${Math.round(share * 1000) / 10}%`);

function WindowPicker({ value, onChange, testId }: { value: WindowName; onChange: (w: WindowName) => void; testId: string }) {
  return (
    <label className="row">
      Moves
      <select value={value} onChange={(e) => onChange(e.target.value as WindowName)} data-testid={testId}>
        {Object.entries(WINDOWS).map(([name, label]) => (
          <option key={name} value={name}>
            {label}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * The edges a Sankey can draw (a depth-first walk from where users enter drops each edge back to a step on the current
 * path) and the loops it cannot.
 */
export function splitLoops(edges: Edge[]): { forward: Edge[]; loops: Edge[] } {
  const out = new Map<string, Edge[]>();
  for (const edge of edges) out.set(edge.from ?? ENTERED, [...(out.get(edge.from ?? ENTERED) ?? []), edge]);
  const loops = new Set<Edge>();
  const done = new Set<string>();
  const onPath = new Set<string>();
  const visit = (node: string) => {
    onPath.add(node);
    for (const edge of out.get(node) ?? []) {
      if (onPath.has(edge.to)) loops.add(edge);
      else if (!done.has(edge.to)) visit(edge.to);
    }
    onPath.delete(node);
    done.add(node);
  };
  visit(ENTERED);
  for (const node of out.keys()) if (!done.has(node)) visit(node);
  return { forward: edges.filter((e) => !loops.has(e)), loops: edges.filter((e) => loops.has(e)) };
}

function PathsSankey({ edges }: { edges: Edge[] }) {
  const colors = useChartColors();
  const data = useMemo(() => {
    const names = [...new Set(edges.flatMap((e) => [e.from ?? ENTERED, e.to]))];
    const index = new Map(names.map((name, i) => [name, i]));
    return {
      nodes: names.map((name) => ({ name })),
      links: edges.map((e) => ({ source: index.get(e.from ?? ENTERED)!, target: index.get(e.to)!, value: e.moves })),
    };
  }, [edges]);
  return (
    <ResponsiveContainer width="100%" height={320}>
      <Sankey
        data={data}
        nodePadding={24}
        nodeWidth={12}
        margin={{ top: 8, right: 120, bottom: 8, left: 8 }}
        link={{ stroke: colors.lines[0], strokeOpacity: 0.25 }}
        node={({ x, y, width, height, payload }) => (
          <Layer className="paths-node">
            <Rectangle x={x} y={y} width={width} height={height} fill={colors.lines[0]} fillOpacity={0.9} />
            <text x={x + width + 6} y={y + height / 2} dominantBaseline="middle" fill={colors.text} fontSize={12}>
              {payload.name} · {formatCount(payload.value)}
            </text>
          </Layer>
        )}
      >
        <Tooltip contentStyle={{ background: 'var(--surface)', borderColor: 'var(--line)', color: 'var(--fg)' }} />
      </Sankey>
    </ResponsiveContainer>
  );
}

function EdgeTable({ edges, caption, testId }: { edges: Edge[]; caption: string; testId: string }) {
  return (
    <table data-testid={testId}>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">From</th>
          <th scope="col">To</th>
          <th scope="col">Moves</th>
          <th scope="col">Users</th>
        </tr>
      </thead>
      <tbody>
        {edges.map((e) => (
          <tr key={`${e.from}->${e.to}`} data-edge={`${e.from ?? ENTERED}->${e.to}`}>
            <td>{e.from ?? ENTERED}</td>
            <td>{e.to}</td>
            <td className="number">{formatCount(e.moves)}</td>
            <td className="number">{formatCount(e.users)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The moves between the journey's steps in a window: a Sankey of the forward edges, a table of every edge. */
export function PathsDialog({ tenant, instanceId, onClose }: { tenant: string; instanceId: string; onClose: () => void }) {
  const [span, setSpan] = useState<WindowName>('start');
  const query = windowQuery(span);
  const paths = useQuery<Paths>(`paths:${tenant}:${instanceId}:${span}`, () =>
    apiGet(tenantPath(tenant, `/instances/${instanceId}/paths${query ? `?${query}` : ''}`)),
  );
  const split = useMemo(() => splitLoops(paths.data?.edges ?? []), [paths.data]);
  return (
    <Dialog title="Paths users took" onClose={onClose} testId="paths-dialog">
      <div className="dialog-body journey-flow">
        <div className="row chart-controls">
          <WindowPicker value={span} onChange={setSpan} testId="paths-window" />
        </div>
        {paths.loading && !paths.data && <Loading what="paths" />}
        {paths.error && <ErrorBox error={paths.error} />}
        {paths.data && paths.data.edges.length === 0 && <p className="muted">No user moved in this window.</p>}
        {paths.data && paths.data.edges.length > 0 && (
          <>
            <p className="muted">
              Moves from {new Date(paths.data.from).toLocaleString()} to {new Date(paths.data.to).toLocaleString()}: each band is as wide as the moves along it.
            </p>
            <div className="paths-sankey" data-testid="paths-sankey">
              <PathsSankey edges={split.forward} />
            </div>
            <EdgeTable edges={paths.data.edges} caption="Every edge: moves along it and the distinct users who took it" testId="paths-table" />
            {split.loops.length > 0 && (
              <p className="muted" data-testid="paths-loops">
                Back to an earlier step (not drawn): {split.loops.map((e) => `${e.from} → ${e.to} (${formatCount(e.moves)})`).join(', ')}
              </p>
            )}
          </>
        )}
      </div>
    </Dialog>
  );
}

/** The steps a user passes on the journey's first way through: from the entry step, each step's first next step. */
export function mainPath(steps: Step[]): string[] {
  const byName = new Map(steps.map((step) => [step.name, step]));
  const path: string[] = [];
  let step: Step | undefined = steps[0];
  while (step && !path.includes(step.name)) {
    path.push(step.name);
    const next = firstNext(step);
    step = next === undefined ? undefined : byName.get(next);
  }
  return path;
}

function firstNext(step: Step): string | undefined {
  switch (step.kind) {
    case 'branch':
      return step.branches[0]?.next;
    case 'split':
      return step.paths[0]?.next;
    default:
      return step.next;
  }
}

/** Users who entered the chosen steps in order, as bars, with the conversion from each step to the next. */
export function FunnelDialog({ tenant, instanceId, steps, onClose }: { tenant: string; instanceId: string; steps: Step[]; onClose: () => void }) {
  const [span, setSpan] = useState<WindowName>('start');
  const [typed, setTyped] = useState(() => mainPath(steps).join(', '));
  const [chosen, setChosen] = useState(typed);
  const colors = useChartColors();
  const list = chosen
    .split(',')
    .map((s) => s.trim())
    .join(',');
  const query = [`steps=${encodeURIComponent(list)}`, windowQuery(span)].filter(Boolean).join('&');
  const funnel = useQuery<Funnel>(`funnel:${tenant}:${instanceId}:${span}:${list}`, () =>
    apiGet(tenantPath(tenant, `/instances/${instanceId}/funnel?${query}`)),
  );
  const bars = (funnel.data?.steps ?? []).map((s) => ({ ...s, label: `${formatCount(s.users)} · ${percent(s.ofFirst)}` }));
  return (
    <Dialog title="Funnel" onClose={onClose} testId="funnel-dialog">
      <div className="dialog-body journey-flow">
        <form
          className="row chart-controls"
          onSubmit={(e) => {
            e.preventDefault();
            setChosen(typed);
          }}
        >
          <label className="row">
            Steps, in order
            <input value={typed} onChange={(e) => setTyped(e.target.value)} data-testid="funnel-steps" size={40} />
          </label>
          <button type="submit" data-testid="funnel-apply">
            Show
          </button>
          <WindowPicker value={span} onChange={setSpan} testId="funnel-window" />
        </form>
        {funnel.loading && !funnel.data && <Loading what="the funnel" />}
        {funnel.error && <ErrorBox error={funnel.error} />}
        {funnel.data && (
          <>
            <div className="funnel-bars" data-testid="funnel-bars">
              <ResponsiveContainer width="100%" height={40 + 44 * bars.length}>
                <BarChart data={bars} layout="vertical" margin={{ top: 8, right: 110, bottom: 8, left: 8 }}>
                  <XAxis type="number" hide domain={[0, 'dataMax']} />
                  <YAxis type="category" dataKey="step" width={110} tick={{ fill: colors.text, fontSize: 12 }} stroke={colors.text} />
                  <Bar dataKey="users" fill={colors.lines[0]} isAnimationActive={false}>
                    <LabelList dataKey="label" position="right" fill={colors.text} fontSize={12} />
                  </Bar>
                </BarChart>
              </ResponsiveContainer>
            </div>
            <table data-testid="funnel-table">
              <caption>Users who entered each step after every step above it, within the window</caption>
              <thead>
                <tr>
                  <th scope="col">Step</th>
                  <th scope="col">Users</th>
                  <th scope="col">From the step above</th>
                  <th scope="col">Of the first step</th>
                </tr>
              </thead>
              <tbody>
                {funnel.data.steps.map((s, i) => (
                  <tr key={`${i}-${s.step}`} data-step={s.step}>
                    <td>{s.step}</td>
                    <td className="number">{formatCount(s.users)}</td>
                    <td className="number">{percent(s.conversion)}</td>
                    <td className="number">{percent(s.ofFirst)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </>
        )}
      </div>
    </Dialog>
  );
}
