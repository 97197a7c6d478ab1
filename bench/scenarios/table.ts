// Turns the measured figures into the table's rows: our figure, the per-user-rows baseline, the limit, the target.
import type { Provider } from '../lib/database';
import { formatNumber, type Figure, type ScenarioResult, type Target } from '../lib/report';
import type { CrowdFigures } from './crowd';
import type { EngineFigures } from './engine';
import type { JourneyFigures, Measured } from './journey';
import type { LimitFigures } from './limits';
import type { LoadFigures } from './load-latency';
import type { IngestFigures } from './ingest';
import type { EntryFigures } from './entry';
import { exportRows, type ExportFigures } from './exports-table';
import { profileRows, type ProfileFigures } from './profiles-table';
import type { ProcedureFigures } from './procedures';
import type { RowsFigures } from './rows';
import type { TimeoutFigures } from './timeouts';
import type { PathsFigures } from './paths';
import type { WebhookFigures } from './webhooks';
import { clusterRows, type ClusterFigures } from './cluster';
import type { TenantFigures } from './tenants';
import { tenantRows } from './tenants-table';
import type { IsolationFigures } from './isolation';
import type { CapFigures } from './caps';
import { isolationRows } from './isolation-table';
import { restartRows, type RestartFigures } from './restart-big';

export interface AllFigures {
  scale: { scale: number; users: number; rowUsers: number; recoveryMoves: number };
  crowd?: CrowdFigures;
  limits: LimitFigures;
  rows: Partial<Record<Provider, RowsFigures>>;
  http: Partial<Record<Provider, JourneyFigures>>;
  engine: Partial<Record<Provider, EngineFigures>>;
  load?: Partial<Record<Provider, LoadFigures>>;
  ingest?: Partial<Record<Provider, IngestFigures>>;
  entry?: Partial<Record<Provider, EntryFigures>>;
  profiles?: Partial<Record<Provider, ProfileFigures>>;
  procedures?: Partial<Record<Provider, ProcedureFigures>>;
  webhooks?: Partial<Record<Provider, WebhookFigures>>;
  /** PostgreSQL only: a cluster needs a database several processes share. */
  cluster?: ClusterFigures;
  timeouts?: Partial<Record<Provider, TimeoutFigures>>;
  tenants?: Partial<Record<Provider, TenantFigures>>;
  paths?: Partial<Record<Provider, PathsFigures>>;
  isolation?: Partial<Record<Provider, IsolationFigures>>;
  exports?: Partial<Record<Provider, ExportFigures>>;
  caps?: CapFigures;
  restart?: Partial<Record<Provider, RestartFigures>>;
}

const ms = (value: number | null | undefined, note?: string): Figure => ({ value: value ?? null, unit: 'ms', ...(note ? { note } : {}) });
const measured = (m: Measured | undefined, unit: string): Figure =>
  m ? { value: m.value, unit, ...(m.note ? { note: m.note } : {}) } : { value: null, unit, note: 'not run' };

const timed = (t: { wallMs: number; cpuMs: number }): Figure => ({ value: t.wallMs, unit: 'ms', note: `(CPU ${formatNumber(t.cpuMs)})` });
const lower = (value: number, text: string, extra: Partial<Target> = {}): Target => ({ value, direction: 'lower', text, ...extra });
const higher = (value: number, text: string, extra: Partial<Target> = {}): Target => ({ value, direction: 'higher', text, ...extra });

export function buildResults(all: AllFigures): ScenarioResult[] {
  const { scale, crowd, limits } = all;
  const millions = (n: number) => `${n / 1_000_000}M`;
  const U = millions(scale.users);
  /** Whole-crowd work of the per-user-rows baseline grows with the rows: measured at rowUsers, scaled to the crowd. */
  const rowsScaled = (value: number | undefined) =>
    value === undefined ? undefined : ms(value * (scale.users / scale.rowUsers), `(${millions(scale.rowUsers)} rows ×${scale.users / scale.rowUsers})`);
  /** Prisma createMany time per user (timed over a tenth of the rows), times the crowd. */
  const rowsStart = (rows: RowsFigures | undefined) =>
    rows === undefined
      ? undefined
      : ms(rows.startMsPerUser * scale.users, `(createMany of ${millions(scale.rowUsers / 10)} rows ×${Math.round((10 * scale.users) / scale.rowUsers)})`);
  const out: ScenarioResult[] = [];

  const caps = all.caps;
  if (caps) {
    const facts = caps.decision.details as { atCap: number } | undefined;
    out.push({
      scenario: `frequency cap: decide a ${U}-user move into a webhook step, ${facts ? millions(facts.atCap) : '40%'} at the cap (in process)`,
      provider: 'memory',
      ours: measured(caps.decision, 'ms'),
      target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
      details: caps.decision.details,
    });
    out.push({
      scenario: `frequency cap: decide and count the ${U}-user move into the window's levels (in process)`,
      provider: 'memory',
      ours: measured(caps.decideAndCount, 'ms'),
      details: caps.decideAndCount.details,
    });
    out.push({
      scenario: 'frequency cap: encode the counted window (what the round writes)',
      provider: 'memory',
      ours: measured(caps.encode, 'ms'),
      details: caps.encode.details,
    });
  }

  if (crowd) {
    out.push({
      scenario: `parse ${U}-ID text upload (library)`,
      provider: 'memory',
      ours: timed(crowd.parseText),
      limit: ms(crowd.parseTextLimitMs),
      target: lower(1500, '≤ 1.5 s', { scalesWithUsers: true }),
    });
    out.push({
      scenario: `parse ${U}-user roaring upload (library)`,
      provider: 'memory',
      ours: timed(crowd.parseRoaring),
      limit: ms(crowd.parseRoaringLimitMs),
      target: lower(50, '≤ 50 ms', { scalesWithUsers: true }),
    });
    out.push({
      scenario: `export ${U} IDs as CSV (library)`,
      provider: 'memory',
      ours: timed(crowd.exportCsv),
      limit: ms(crowd.exportCsvLimitMs),
      target: lower(2000, '≤ 2 s', { scalesWithUsers: true }),
    });
    out.push({
      scenario: `export ${U} IDs as roaring (library)`,
      provider: 'memory',
      ours: timed(crowd.exportRoaring),
      limit: ms(crowd.exportRoaringLimitMs),
      target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
    });
  }

  for (const provider of ['sqlite', 'postgres'] as const) {
    const http = all.http[provider];
    const rows = all.rows[provider];
    const engine = all.engine[provider];
    const where = `http-${provider}` as const;
    if (engine) {
      out.push({
        scenario: `start instance over ${U} users, ${8} partitions (engine only, no HTTP)`,
        provider,
        ours: measured(engine.start, 'ms'),
        rows: rowsStart(rows),
        limit: ms(limits.startMs),
        target: lower(2000, '≤ 2 s, ≥ 50× rows', { scalesWithUsers: true, minSpeedupVsRows: 50 }),
      });
      out.push({
        scenario: `start over ${U} users into a 3-way profile branch, until running with each path's count exact (engine only, × a plain start timed beside it)`,
        provider,
        ours: measured(engine.routedStart, '×'),
        target: lower(2, '≤ 2× a plain start'),
        details: engine.routedStart?.details,
      });
      out.push({
        scenario: `start over ${U} users holding out 10%, until running with the holdout group's size exact (engine only, × a plain start timed beside it)`,
        provider,
        ours: measured(engine.holdoutStart, '×'),
        target: lower(1.1, '≤ 1.1× a plain start (holdout assignment adds ≤ 10%)'),
        details: engine.holdoutStart?.details,
      });
      out.push({
        scenario: `start over ${U} users whose exit criteria over profiles take out ~30% at once, until running with the exited count exact (engine only, × a plain start timed beside it)`,
        provider,
        ours: measured(engine.exitStart, '×'),
        target: lower(2, '≤ 2× a plain start (set here, as for audience paths: one bitmap plan per partition)'),
        details: engine.exitStart?.details,
      });
      out.push({
        scenario: `per-step counts of a ${U}-user instance (engine only, p99)`,
        provider,
        ours: measured(engine.counts, 'ms'),
        rows: rowsScaled(rows?.countsP99Ms),
        limit: ms(limits.countsP99Ms),
        target: lower(5, 'p99 ≤ 5 ms'),
      });
      out.push({
        scenario: 'engine-only apply (no HTTP), branch step with CEL',
        provider,
        ours: measured(engine.apply, 'events/s'),
        rows: rows ? { value: rows.applyEventsPerSecond, unit: 'events/s', note: `(at ${millions(scale.rowUsers)} rows)` } : undefined,
        limit: { value: limits.applyEventsPerSecond, unit: 'events/s' },
        target: higher(300_000, '≥ 300k/s, ≤ 10× limit', { maxOverheadVsLimit: 10 }),
        details: engine.apply?.details,
      });
      out.push({
        scenario: `memory of a running ${U}-user dense instance (engine shard bitmaps)`,
        provider,
        ours: measured(engine.memory, 'B/user'),
        limit: { value: limits.bytesPerUser, unit: 'B/user' },
        target: lower(2, '≤ 2 B/user'),
        details: engine.memory?.details,
      });
    }
    const procedures = all.procedures?.[provider];
    if (procedures) {
      const stepsTarget = provider === 'sqlite' ? 2_000 : 1_000;
      out.push({
        scenario: 'procedure runner: steps committed per second, independent procedures',
        provider,
        ours: measured(procedures.throughput, 'steps/s'),
        target: higher(stepsTarget, `≥ ${formatNumber(stepsTarget)}/s`),
      });
      out.push({
        scenario: 'procedure runner: steps per second, procedures on one exclusive key (one at a time; informational)',
        provider,
        ours: measured(procedures.serialized, 'steps/s'),
      });
      out.push({
        scenario: 'procedure runner fairness: a tenant with 10% of the queue, queued last, all done at (% of the run)',
        provider,
        ours: measured(procedures.fairness, '%'),
        target: lower(50, '≤ 50%'),
      });
    }
    const webhooks = all.webhooks?.[provider];
    if (webhooks) {
      out.push({
        scenario: `webhooks: a ${U}-user move delivered to a quick local receiver (signed batches through the procedure runner)`,
        provider,
        ours: measured(webhooks.seconds, 's'),
        target: lower(60 * scale.scale, `≤ ${60 * scale.scale} s`),
      });
    }
    const timeouts = all.timeouts?.[provider];
    if (timeouts) {
      out.push({
        scenario: `branch step timeout: ${U} users timing out at once (fire → counts, engine only)`,
        provider,
        ours: measured(timeouts.timeout, 'ms'),
        limit: ms(limits.timerMs),
        target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
      });
      out.push({
        scenario: `local-time timer (09:00 in each user's zone) over ${U} users in 5 zones + default: slowest zone, fire → counts (engine only)`,
        provider,
        ours: measured(timeouts.localTime, 'ms'),
        target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
        details: timeouts.localTime.details,
      });
    }
    const paths = all.paths?.[provider];
    if (paths) {
      const day = `a day of ${millions(scale.rowUsers)} users' moves (engine in process, read from the journal)`;
      out.push({
        scenario: `paths: moves and distinct users per edge over ${day}`,
        provider,
        ours: measured(paths.paths, 'ms'),
        target: lower(1000, '≤ 1 s', { scalesWithUsers: true }),
        details: paths.paths.details,
      });
      out.push({
        scenario: `funnel of 4 steps over ${day}`,
        provider,
        ours: measured(paths.funnel, 'ms'),
        details: paths.funnel.details,
      });
      out.push({
        scenario: `counts asOf an hour back over ${day} (checkpoints turned back)`,
        provider,
        ours: measured(paths.asOf, 'ms'),
        target: lower(2000, '≤ 2 s', { scalesWithUsers: true }),
        details: paths.asOf.details,
      });
    }
    const load = all.load?.[provider];
    if (load) {
      const phases = [
        ['idle', 'nothing else running'],
        ['apply', `${millions(scale.users / 10)} events applied`],
        ['timer', `a timer moving ${U} users`],
        ['start', `a ${U}-user instance starting`],
        ['exportCsv', `a ${U}-user CSV export streaming`],
      ] as const;
      for (const [key, what] of phases) {
        out.push({
          scenario: `API latency under engine load: counts of another tenant (p99) while ${what}`,
          provider: where,
          ours: measured(load[key], 'ms'),
          target: lower(50, 'p99 ≤ 50 ms, max ≤ 200 ms'),
          details: load[key].details,
        });
      }
    }
    const ingest = all.ingest?.[provider];
    if (ingest) {
      out.push({
        scenario: 'events end to end over HTTP with an Idempotency-Key on every batch and an id on every event, % of the rate without',
        provider: where,
        ours: measured(ingest.ratio, '%'),
        target: higher(90, '≥ 90% of without'),
        details: ingest.ratio.details,
      });
    }
    const entry = all.entry?.[provider];
    if (entry) {
      out.push({
        scenario: 'event-triggered entry over HTTP (batches of 1,000: 500 sign-ups among 500 other events), entries/s',
        provider: where,
        ours: measured(entry.entries, 'entries/s'),
        details: entry.entries.details,
      });
    }
    if (!http) continue;
    const row = (scenario: string, key: keyof JourneyFigures, unit: string, extra: Omit<ScenarioResult, 'scenario' | 'provider' | 'ours'>) =>
      out.push({ scenario, provider: where, ours: measured(http[key], unit), details: http[key].details, ...extra });
    row(`upload ${U}-ID text crowd over HTTP (parse + store)`, 'uploadText', 'ms', {
      limit: crowd ? ms(crowd.parseTextLimitMs) : undefined,
      target: lower(1500, '≤ 1.5 s', { scalesWithUsers: true }),
    });
    row(`start instance over ${U} users, ${8} partitions, until running`, 'start', 'ms', {
      rows: rowsStart(rows),
      limit: ms(limits.startMs),
      target: lower(2000, '≤ 2 s, ≥ 50× rows', { scalesWithUsers: true, minSpeedupVsRows: 50 }),
    });
    row('events end to end (HTTP batches of 1,000), branch step with CEL', 'apply', 'events/s', {
      rows: rows ? { value: rows.applyEventsPerSecond, unit: 'events/s', note: `(at ${millions(scale.rowUsers)} rows)` } : undefined,
      limit: { value: limits.applyFromJsonEventsPerSecond, unit: 'events/s' },
      target: higher(100_000, '≥ 100k/s'),
    });
    row(`timer step moving ${U} users (fire → counts)`, 'timer', 'ms', {
      rows: rowsScaled(rows?.timerMs),
      limit: ms(limits.timerMs),
      target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
    });
    row(`per-step counts of a ${U}-user instance (API p99)`, 'counts', 'ms', {
      rows: rowsScaled(rows?.countsP99Ms),
      limit: ms(limits.countsP99Ms),
      target: lower(5, 'p99 ≤ 5 ms'),
    });
    row('SSE latency, event sent → count seen (p99)', 'sse', 'ms', { target: lower(1000, 'p99 ≤ 1 s') });
    row(`export a ${U}-user step as CSV (HTTP)`, 'exportCsv', 'ms', {
      rows: rowsScaled(rows?.exportCsvMs),
      limit: ms(limits.exportCsvMs),
      target: lower(2000, '≤ 2 s', { scalesWithUsers: true }),
    });
    row(`export a ${U}-user step as roaring (HTTP)`, 'exportRoaring', 'ms', {
      limit: ms(limits.exportRoaringMs),
      target: lower(100, '≤ 100 ms', { scalesWithUsers: true }),
    });
    row(`restart recovery: SIGKILL after ${millions(scale.recoveryMoves)} moves (spawn → counts)`, 'recovery', 'ms', {
      limit: ms(limits.recoveryMs),
      target: lower(5000, '≤ 5 s', { scalesWithUsers: true }),
    });
    row(`memory: server RSS growth starting a 2nd ${U}-user instance (informational; GC makes it noisy)`, 'memory', 'B/user', {
      rows: rows?.storageBytesPerUser != null ? { value: rows.storageBytesPerUser, unit: 'B/user', note: '(on disk)' } : undefined,
      limit: { value: limits.bytesPerUser, unit: 'B/user' },
    });
  }
  for (const provider of ['sqlite', 'postgres'] as const) {
    const figures = all.profiles?.[provider];
    if (figures) out.push(...profileRows(figures, provider, U));
  }
  for (const provider of ['sqlite', 'postgres'] as const) {
    const figures = all.exports?.[provider];
    if (figures) out.push(...exportRows(figures, provider, U));
  }
  if (all.cluster) out.push(...clusterRows(all.cluster));
  for (const provider of ['sqlite', 'postgres'] as const) {
    const figures = all.tenants?.[provider];
    if (figures) out.push(...tenantRows(figures, provider));
  }
  for (const provider of ['sqlite', 'postgres'] as const) {
    const figures = all.isolation?.[provider];
    if (figures) out.push(...isolationRows(figures, provider));
  }
  for (const provider of ['sqlite', 'postgres'] as const) {
    const figures = all.restart?.[provider];
    if (figures) out.push(...restartRows(figures, provider));
  }
  return out;
}
