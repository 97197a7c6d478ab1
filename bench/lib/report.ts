// What a scenario reports, and how the run prints and saves it.

export type Direction = 'lower' | 'higher';

/** One measured quantity; `value` is null when it could not be measured (`note` says why). */
export interface Figure {
  value: number | null;
  unit: string;
  note?: string;
}

export interface Target {
  /** The bar for Crowdflow's figure, in the figure's unit, at full scale. */
  value: number;
  direction: Direction;
  /** Time targets of whole-crowd work scale with the crowd in --quick runs; rates and latencies do not. */
  scalesWithUsers?: boolean;
  /** A second bar: at least this many times better than the per-user-rows baseline. */
  minSpeedupVsRows?: number;
  /** A third bar: at most this many times worse than the limit. */
  maxOverheadVsLimit?: number;
  text: string;
}

export interface ScenarioResult {
  scenario: string;
  provider: 'sqlite' | 'postgres' | 'memory' | 'http-sqlite' | 'http-postgres';
  ours: Figure;
  rows?: Figure;
  limit?: Figure;
  target?: Target;
  /** Free-form facts behind the figure (sample counts, percentiles, scale). */
  details?: Record<string, unknown>;
}

export interface ScoredResult extends ScenarioResult {
  direction: Direction;
  /** The target as judged in this run (scaled down in --quick runs where it grows with the crowd). */
  targetText: string;
  speedupVsRows: number | null;
  overheadVsLimit: number | null;
  met: boolean | null;
}

/** How much better `a` is than `b` (>1 means a is better). */
function better(a: number, b: number, direction: Direction): number {
  return direction === 'lower' ? b / a : a / b;
}

export function score(result: ScenarioResult, scale: number): ScoredResult {
  const direction = result.target?.direction ?? 'lower';
  const ours = result.ours.value;
  const rows = result.rows?.value ?? null;
  const limit = result.limit?.value ?? null;
  const speedupVsRows = ours !== null && rows !== null && ours > 0 ? better(ours, rows, direction) : null;
  const overheadVsLimit = ours !== null && limit !== null && limit > 0 ? better(limit, ours, direction) : null;
  let met: boolean | null = null;
  if (result.target && ours !== null) {
    const target = result.target;
    const bar = target.scalesWithUsers ? target.value * scale : target.value;
    met = direction === 'lower' ? ours <= bar : ours >= bar;
    if (target.minSpeedupVsRows !== undefined) met = met && speedupVsRows !== null && speedupVsRows >= target.minSpeedupVsRows;
    if (target.maxOverheadVsLimit !== undefined) met = met && overheadVsLimit !== null && overheadVsLimit <= target.maxOverheadVsLimit;
  }
  const targetText = !result.target
    ? '—'
    : result.target.scalesWithUsers && scale !== 1
      ? `${result.target.text} (÷${Math.round(1 / scale)} → ${formatNumber(result.target.value * scale)} ${result.ours.unit})`
      : result.target.text;
  return { ...result, direction, targetText, speedupVsRows, overheadVsLimit, met };
}

export function formatFigure(figure: Figure | undefined): string {
  if (!figure) return '—';
  if (figure.value === null) return `n/a${figure.note ? ` (${figure.note})` : ''}`;
  return `${formatNumber(figure.value)} ${figure.unit}${figure.note ? ` ${figure.note}` : ''}`;
}

export function formatNumber(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 100_000) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  return value.toPrecision(2);
}

function ratio(value: number | null): string {
  return value === null ? '—' : `${formatNumber(value)}×`;
}

/** A plain-text table that also reads well pasted into Markdown. */
export function formatTable(results: ScoredResult[]): string {
  const header = ['scenario', 'db', 'Crowdflow', 'per-user rows', 'limit', 'vs rows', 'of limit', 'target', 'met?'];
  const lines = results.map((r) => [
    r.scenario,
    r.provider,
    formatFigure(r.ours),
    formatFigure(r.rows),
    formatFigure(r.limit),
    ratio(r.speedupVsRows),
    ratio(r.overheadVsLimit),
    r.targetText,
    r.met === null ? '—' : r.met ? 'yes' : 'NO',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => line[i].length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [row(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(row)].join('\n');
}

/** A periodic progress line for long scenarios (at most one line every `everyMs`). */
export function progress(label: string, everyMs = 2000): (done: number, total: number, extra?: string) => void {
  const started = performance.now();
  let last = started;
  let finished = false;
  return (done, total, extra) => {
    const now = performance.now();
    if (finished || (now - last < everyMs && done < total)) return;
    last = now;
    finished = done >= total;
    const seconds = (now - started) / 1000;
    const percent = total > 0 ? ((100 * done) / total).toFixed(0) : '?';
    console.log(
      `  … ${label}: ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} (${percent}%) after ${seconds.toFixed(1)} s${extra ? `, ${extra}` : ''}`,
    );
  };
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function median(samples: number[]): number {
  return percentile(samples, 50);
}

/**
 * Runs `work` `times` times and returns the medians (the first run only warms up) of its wall time and of the
 * CPU time this process used meanwhile: the CPU figure is what a quiet machine would show for single-threaded work.
 */
export async function medianTimes(times: number, work: () => unknown): Promise<{ wallMs: number; cpuMs: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < times; i++) {
    const cpuBefore = process.cpuUsage();
    const start = performance.now();
    await work();
    wall.push(performance.now() - start);
    const used = process.cpuUsage(cpuBefore);
    cpu.push((used.user + used.system) / 1000);
  }
  const measured = (samples: number[]) => median(samples.length > 1 ? samples.slice(1) : samples);
  return { wallMs: measured(wall), cpuMs: measured(cpu) };
}

export async function medianMs(times: number, work: () => unknown): Promise<number> {
  return (await medianTimes(times, work)).wallMs;
}
