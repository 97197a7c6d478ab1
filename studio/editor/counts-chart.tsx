'use client';
import { useMemo, useState } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { HistoryPoint } from '../../server/engine/counts-history';
import { apiGet, tenantPath } from '../api';
import type { Counts } from '../model';
import { useQuery } from '../query';
import { Dialog, ErrorBox, formatCount } from '../ui';
import { useCanvasInfo, useCounts } from './context';

// Counts over time (GET …/counts/history, sampled once a minute by the engine): a sparkline on each step node and a
// chart of the chosen steps and the conversion rate. One feed per running instance fetches; the rest read its key.
// The live counts (SSE) are drawn as the last point: between samples, the chart ends where the nodes are, not at
// the minute's sample (an event-triggered instance is sampled empty at its start, before anyone entered).

type History = { points: HistoryPoint[] };
type Resolution = 'minute' | 'hour' | 'day';

const HISTORY_REFRESH_MS = 60_000;
const RANGE_MS: Record<Resolution, number> = { minute: 24 * 3_600_000, hour: 14 * 24 * 3_600_000, day: 90 * 24 * 3_600_000 };
const LINE_COLORS = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#dc2626', '#0891b2', '#4b5563'];

export const countsHistoryKey = (tenant: string, instanceId: string, resolution: Resolution = 'minute') => `history:${tenant}:${instanceId}:${resolution}`;

function fetchHistory(tenant: string, instanceId: string, resolution: Resolution): () => Promise<History> {
  return () => {
    const from = new Date(Date.now() - RANGE_MS[resolution]).toISOString();
    return apiGet<History>(tenantPath(tenant, `/instances/${instanceId}/counts/history?resolution=${resolution}&from=${encodeURIComponent(from)}`));
  };
}

/** The samples, then the live counts as of now (when there are live counts). */
function withLivePoint(points: HistoryPoint[], live: Counts | undefined): HistoryPoint[] {
  if (!live) return points;
  const { total, entered, converted, convertedFrom, steps } = live;
  return [...points, { at: new Date().toISOString(), total, entered, ...(converted === undefined ? {} : { converted, convertedFrom }), steps }];
}

/** Keeps the last day of minute samples of the running instance in the query cache (the sparklines read it). */
export function CountsHistoryFeed({ tenant, instanceId }: { tenant: string; instanceId: string }) {
  useQuery<History>(countsHistoryKey(tenant, instanceId), fetchHistory(tenant, instanceId, 'minute'), { refetchMs: HISTORY_REFRESH_MS });
  return null;
}

/** The step's users over the last day up to now, drawn under its count (nothing until a sample and the live counts exist). */
export function StepSparkline({ step }: { step: string }) {
  const { tenant, instanceId, live } = useCanvasInfo();
  const counts = useCounts();
  const history = useQuery<History>(live && instanceId ? countsHistoryKey(tenant, instanceId) : null).data;
  const data = useMemo(
    () => (history ? withLivePoint(history.points, counts).map((p) => ({ at: p.at, users: p.steps[step] ?? 0 })) : []),
    [history, counts, step],
  );
  if (data.length < 2) return null;
  return (
    <div className="step-sparkline" data-testid="step-sparkline" data-points={data.length}>
      <ResponsiveContainer width="100%" height={24}>
        <LineChart data={data} margin={{ top: 2, right: 2, bottom: 2, left: 2 }}>
          <YAxis hide domain={[0, 'dataMax']} />
          <Line type="monotone" dataKey="users" stroke="#2563eb" strokeWidth={1.5} dot={false} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

/** The chosen steps over time up to the live counts and, with a goal, the share of entered users who converted. */
export function CountsChartDialog({
  tenant,
  instanceId,
  steps,
  live,
  onClose,
}: {
  tenant: string;
  instanceId: string;
  steps: string[];
  live: Counts | undefined;
  onClose: () => void;
}) {
  const [resolution, setResolution] = useState<Resolution>('minute');
  const [chosen, setChosen] = useState<string[]>(steps.slice(0, 3));
  const history = useQuery<History>(countsHistoryKey(tenant, instanceId, resolution), fetchHistory(tenant, instanceId, resolution), {
    refetchMs: HISTORY_REFRESH_MS,
  });
  const samples = history.data?.points;
  const points = useMemo(() => (samples ? withLivePoint(samples, live) : []), [samples, live]);
  const hasGoal = points.some((p) => p.converted !== undefined);
  const data = useMemo(
    () =>
      points.map((p) => ({
        at: new Date(p.at).getTime(),
        ...Object.fromEntries(chosen.map((step) => [step, p.steps[step] ?? 0])),
        ...(p.converted !== undefined && p.entered > 0 ? { conversion: Math.round((1000 * p.converted) / p.entered) / 10 } : {}),
      })),
    [points, chosen],
  );
  // A line of one point draws nothing: dots then show it (a new instance; the conversion rate, unknown while nobody
  // had entered, has only the live point after an empty start).
  const lonePoints = data.length < 2;
  const loneRate = data.filter((p) => 'conversion' in p).length < 2;
  const toggle = (step: string) => setChosen((now) => (now.includes(step) ? now.filter((s) => s !== step) : [...now, step]));
  const time = (at: number) =>
    new Date(at).toLocaleString(
      undefined,
      resolution === 'minute'
        ? { hour: '2-digit', minute: '2-digit' }
        : { month: 'short', day: 'numeric', hour: resolution === 'hour' ? '2-digit' : undefined },
    );
  return (
    <Dialog title="Counts over time" onClose={onClose} testId="counts-chart">
      <div className="dialog-body">
        <div className="row chart-controls">
          {steps.map((step) => (
            <label key={step} className="row">
              <input type="checkbox" checked={chosen.includes(step)} onChange={() => toggle(step)} data-testid={`chart-step-${step}`} />
              {step}
            </label>
          ))}
          <select value={resolution} onChange={(e) => setResolution(e.target.value as Resolution)} data-testid="chart-resolution">
            <option value="minute">last day, by minute</option>
            <option value="hour">last 2 weeks, by hour</option>
            <option value="day">last 90 days, by day</option>
          </select>
        </div>
        {history.error && <ErrorBox error={history.error} />}
        {points.length === 0 ? (
          <p className="muted">No samples yet: counts are sampled once a minute while the instance runs.</p>
        ) : (
          <div
            className="counts-chart"
            data-testid="counts-chart-plot"
            data-points={points.length}
            data-last-steps={JSON.stringify(points[points.length - 1].steps)}
          >
            <ResponsiveContainer width="100%" height={320}>
              <LineChart data={data} margin={{ top: 8, right: 16, bottom: 8, left: 8 }}>
                <CartesianGrid strokeDasharray="3 3" />
                <XAxis dataKey="at" type="number" scale="time" domain={['dataMin', 'dataMax']} tickFormatter={time} />
                <YAxis yAxisId="users" allowDecimals={false} tickFormatter={(v: number) => formatCount(v)} />
                {hasGoal && <YAxis yAxisId="rate" orientation="right" unit="%" domain={[0, 100]} />}
                <Tooltip labelFormatter={(at) => new Date(Number(at)).toLocaleString()} />
                <Legend />
                {chosen.map((step, i) => (
                  <Line
                    key={step}
                    yAxisId="users"
                    type="monotone"
                    dataKey={step}
                    stroke={LINE_COLORS[i % LINE_COLORS.length]}
                    dot={lonePoints}
                    isAnimationActive={false}
                  />
                ))}
                {hasGoal && (
                  <Line
                    yAxisId="rate"
                    type="monotone"
                    dataKey="conversion"
                    name="converted %"
                    stroke="#111827"
                    strokeDasharray="4 2"
                    dot={loneRate}
                    isAnimationActive={false}
                  />
                )}
              </LineChart>
            </ResponsiveContainer>
          </div>
        )}
      </div>
    </Dialog>
  );
}
