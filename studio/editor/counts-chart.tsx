'use client';
import { useMemo, useState } from 'react';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { HistoryPoint } from '../../server/engine/counts-history';
import type { Step } from '../../core/model/workflow';
import { apiGet, tenantPath } from '../api';
import type { Counts } from '../model';
import { useQuery } from '../query';
import { Dialog, ErrorBox, formatCount } from '../ui';
import { exitSteps, FINEST_TICK, timeTicks, useChartColors } from './chart-scale';
import { useCanvasInfo, useCounts } from './context';
import { goalFigure } from './goal-result';

// Counts over time (GET …/counts/history, sampled once a minute by the engine): a sparkline on each step node and a
// chart of the chosen steps and the conversion rate. One feed per running instance fetches; the rest read its key.
// The live counts (SSE) are drawn as the last point: between samples, the chart ends where the nodes are, not at
// the minute's sample (an event-triggered instance is sampled empty at its start, before anyone entered).
// Lines step from sample to sample: a count holds until the next one, and a smoothed curve turned a step change into
// a slope that never happened.

type History = { points: HistoryPoint[] };
type Resolution = 'minute' | 'hour' | 'day';

const HISTORY_REFRESH_MS = 60_000;
const RANGE_MS: Record<Resolution, number> = { minute: 24 * 3_600_000, hour: 14 * 24 * 3_600_000, day: 90 * 24 * 3_600_000 };
/** The series of the users who reached the goal, beside the steps' (no step may be named with a space). */
const CONVERTED = 'converted (goal)';

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
  const colors = useChartColors();
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
          <Line type="stepAfter" dataKey="users" stroke={colors.lines[0]} strokeWidth={1.5} dot={false} isAnimationActive={false} />
        </LineChart>
      </ResponsiveContainer>
    </div>
  );
}

/**
 * The chosen steps over time up to the live counts and, with a goal, the users who converted and their share of those
 * who entered (the figure as of now written above the chart). It opens on the series that say how the journey ends:
 * the goal's and the exit steps' (the first steps when there are neither).
 */
export function CountsChartDialog({
  tenant,
  instanceId,
  steps: definitionSteps,
  live,
  onClose,
}: {
  tenant: string;
  instanceId: string;
  steps: Step[];
  live: Counts | undefined;
  onClose: () => void;
}) {
  const goal = goalFigure(live, null, undefined);
  const steps = [...definitionSteps.map((step) => step.name), ...(goal ? [CONVERTED] : [])];
  const [resolution, setResolution] = useState<Resolution>('minute');
  const [chosen, setChosen] = useState<string[]>(() => {
    const ending = [...(goal ? [CONVERTED] : []), ...exitSteps(definitionSteps)];
    return ending.length > 0 ? ending : steps.slice(0, 3);
  });
  const colors = useChartColors();
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
        ...Object.fromEntries(chosen.map((step) => [step, step === CONVERTED ? (p.converted ?? 0) : (p.steps[step] ?? 0)])),
        ...(p.converted !== undefined && p.entered > 0 ? { conversion: Math.round((1000 * p.converted) / p.entered) / 10 } : {}),
      })),
    [points, chosen],
  );
  // A line of one point draws nothing: dots then show it (a new instance; the conversion rate, unknown while nobody
  // had entered, has only the live point after an empty start).
  const lonePoints = data.length < 2;
  const loneRate = data.filter((p) => 'conversion' in p).length < 2;
  const toggle = (step: string) => setChosen((now) => (now.includes(step) ? now.filter((s) => s !== step) : [...now, step]));
  const axis = data.length > 0 ? timeTicks(data[0].at, data[data.length - 1].at, FINEST_TICK[resolution]) : null;
  const axisText = { fill: colors.text, fontSize: 12 };
  return (
    <Dialog title="Counts over time" onClose={onClose} testId="counts-chart">
      <div className="dialog-body">
        {goal && (
          <p className="chart-goal" data-testid="chart-goal">
            <strong>★ Goal</strong> <span className="chart-figure">{goal.rate}</span> converted: {formatCount(goal.converted)} of the {formatCount(goal.of)}{' '}
            users who entered
          </p>
        )}
        <div className="row chart-controls">
          {steps.map((step) => (
            <label key={step} className="row">
              <input
                type="checkbox"
                checked={chosen.includes(step)}
                onChange={() => toggle(step)}
                data-testid={step === CONVERTED ? 'chart-converted' : `chart-step-${step}`}
              />
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
                <CartesianGrid strokeDasharray="3 3" stroke={colors.grid} />
                <XAxis
                  dataKey="at"
                  type="number"
                  scale="time"
                  domain={['dataMin', 'dataMax']}
                  ticks={axis?.ticks}
                  interval={0}
                  tickFormatter={axis?.label}
                  tick={axisText}
                  stroke={colors.text}
                />
                <YAxis yAxisId="users" allowDecimals={false} tickFormatter={(v: number) => formatCount(v)} tick={axisText} stroke={colors.text} />
                {hasGoal && <YAxis yAxisId="rate" orientation="right" unit="%" domain={[0, 100]} tick={axisText} stroke={colors.text} />}
                <Tooltip
                  labelFormatter={(at) => new Date(Number(at)).toLocaleString()}
                  contentStyle={{ background: 'var(--surface)', borderColor: 'var(--line)', color: 'var(--fg)' }}
                />
                <Legend />
                {chosen.map((step, i) => (
                  <Line
                    key={step}
                    yAxisId="users"
                    type="stepAfter"
                    dataKey={step}
                    stroke={colors.lines[i % colors.lines.length]}
                    dot={lonePoints}
                    isAnimationActive={false}
                  />
                ))}
                {hasGoal && (
                  <Line
                    yAxisId="rate"
                    type="stepAfter"
                    dataKey="conversion"
                    name="converted %"
                    className="conversion-line"
                    stroke={colors.conversion}
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
