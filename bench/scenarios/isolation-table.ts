// The isolation section's rows (issue 34): per phase, B's p99 against the control's p99 + 10 ms and B's max against
// 100 ms, for counts and for events, with the control beside each; the costly audience's statuses and latency.
import type { Provider } from '../lib/database';
import type { WindowStats } from '../lib/probe';
import { formatNumber, type ScenarioResult } from '../lib/report';
import { ISOLATION_PHASES, type IsolationFigures, type IsolationPhaseFigures } from './isolation';

const KINDS = [
  ['counts', 'controlCounts', "B's counts (GET)"],
  ['events', 'controlEvents', "B's single-event POST /events"],
] as const;

const missing = { value: null, unit: 'ms', note: 'no sample in the phase' };

export function isolationRows(figures: IsolationFigures, provider: Provider): ScenarioResult[] {
  const out: ScenarioResult[] = [];
  for (const name of ISOLATION_PHASES) {
    const phase = figures.phases[name];
    if (!phase) continue;
    for (const [kind, controlKind, what] of KINDS) {
      const b = phase[kind];
      const control = phase[controlKind];
      const details = { phaseMs: phase.ms, b, control };
      const scenario = `isolation: ${what} while A ${phase.what}`;
      out.push({
        scenario: `${scenario}, p99`,
        provider: `http-${provider}`,
        ours: b
          ? { value: b.p99Ms, unit: 'ms', note: `(p50 ${formatNumber(b.p50Ms)}, ${b.samples} calls${b.failures ? `, ${b.failures} not 2xx` : ''})` }
          : missing,
        limit: control ? { value: control.p99Ms, unit: 'ms', note: '(control)' } : undefined,
        ...(control ? { target: { value: control.p99Ms + 10, direction: 'lower', text: `≤ control + 10 ms (${formatNumber(control.p99Ms + 10)})` } } : {}),
        details,
      });
      out.push({
        scenario: `${scenario}, max`,
        provider: `http-${provider}`,
        ours: b ? { value: b.maxMs, unit: 'ms' } : missing,
        limit: control ? { value: control.maxMs, unit: 'ms', note: '(control)' } : undefined,
        target: { value: 100, direction: 'lower', text: '≤ 100 ms' },
        details,
      });
    }
  }
  const audience = figures.audience;
  if (audience) {
    const refused = Object.entries(audience.statuses).reduce((sum, [status, n]) => sum + (status.startsWith('4') ? n : 0), 0);
    out.push({
      scenario: `isolation: A's audience over the cost budget every 100 ms, answered 4xx (statuses ${JSON.stringify(audience.statuses)})`,
      provider: `http-${provider}`,
      ours: { value: (100 * refused) / audience.samples, unit: '%' },
      target: { value: 100, direction: 'higher', text: '100%' },
      details: { ...audience },
    });
    out.push({
      scenario: "isolation: A's audience over the cost budget, slowest answer",
      provider: `http-${provider}`,
      ours: { value: audience.maxMs, unit: 'ms', note: `(p99 ${formatNumber(audience.p99Ms)}, p50 ${formatNumber(audience.p50Ms)})` },
      target: { value: 100, direction: 'lower', text: '≤ 100 ms' },
      details: { ...audience },
    });
  }
  return out;
}

const cell = (stats: WindowStats | undefined) =>
  stats ? `${formatNumber(stats.p99Ms)} / ${formatNumber(stats.maxMs)} (${stats.samples}${stats.failures ? `, ${stats.failures} not 2xx` : ''})` : '—';
const excess = (b: WindowStats | undefined, control: WindowStats | undefined) =>
  b && control ? `${b.p99Ms - control.p99Ms >= 0 ? '+' : ''}${formatNumber(b.p99Ms - control.p99Ms)} ms, ×${formatNumber(b.p99Ms / control.p99Ms)}` : '—';
const met = (b: WindowStats | undefined, control: WindowStats | undefined) =>
  b && control ? (b.p99Ms <= control.p99Ms + 10 && b.maxMs <= 100 ? 'yes' : 'NO') : '—';

/** One Markdown line per phase: B and control p99 / max (ms), B's p99 over the control's, and whether both bars hold. */
export function isolationSummary(figures: IsolationFigures, provider: Provider): string {
  const lines = [
    `isolation on ${provider} (load ${figures.loadBefore.map((l) => l.toFixed(1)).join(' ')} → ${figures.loadAfter.map((l) => l.toFixed(1)).join(' ')}); p99 / max in ms (calls):`,
    '| phase: A … | B counts | control | B − control p99 | met? | B events | control | B − control p99 | met? | phase s |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const name of ISOLATION_PHASES) {
    const p: IsolationPhaseFigures | undefined = figures.phases[name];
    if (!p) continue;
    lines.push(
      `| ${p.what} | ${cell(p.counts)} | ${cell(p.controlCounts)} | ${excess(p.counts, p.controlCounts)} | ${met(p.counts, p.controlCounts)} | ` +
        `${cell(p.events)} | ${cell(p.controlEvents)} | ${excess(p.events, p.controlEvents)} | ${met(p.events, p.controlEvents)} | ${(p.ms / 1000).toFixed(1)} |`,
    );
  }
  const a = figures.audience;
  if (a)
    lines.push(
      `costly audience: statuses ${JSON.stringify(a.statuses)}, p50 ${formatNumber(a.p50Ms)} / p99 ${formatNumber(a.p99Ms)} / max ${formatNumber(a.maxMs)} ms (target: 4xx within 100 ms)`,
    );
  return lines.join('\n');
}
