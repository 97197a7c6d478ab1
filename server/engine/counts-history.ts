// Counts over time: the engine samples the counts of every running instance once a minute of its clock (one
// CountsSample row per instance and minute), and its hourly housekeeping turns minute samples older than 2 days into
// one sample an hour (the hour's last: counts are levels, entered/converted only grow) and drops hour samples after
// 90 days. Reads (GET …/instances/{iid}/counts/history) take the last sample of each bucket of the asked resolution.
import { badRequest, notFound } from '../errors';
import { type CountsSampleWrite, writeCountsSamples } from '../storage/counts-samples';
import { requireInstance } from './instances';
import type { Counts } from './types';
import type { Database } from '../storage/database';

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const HISTORY_RESOLUTIONS = { minute: MINUTE_MS, hour: HOUR_MS, day: 24 * HOUR_MS } as const;
export type HistoryResolution = keyof typeof HISTORY_RESOLUTIONS;
/** Minute samples are kept this long, then downsampled to hours. */
export const MINUTE_SAMPLES_KEPT_MS = 2 * 24 * HOUR_MS;
/** Hour samples are kept this long. */
export const HOUR_SAMPLES_KEPT_MS = 90 * 24 * HOUR_MS;
/** At most this many points in one answer. */
export const MAX_HISTORY_POINTS = 10_080;

/** What a sample keeps of the counts (edges are left out: the chart draws steps and conversion). */
export type SampledCounts = Pick<Counts, 'total' | 'entered' | 'converted' | 'convertedFrom' | 'steps'>;

export interface HistoryPoint extends SampledCounts {
  at: string;
}

function sampled(counts: Counts): SampledCounts {
  const { total, entered, converted, convertedFrom, steps } = counts;
  return { total, entered, ...(converted === undefined ? {} : { converted, convertedFrom }), steps };
}

/** An instance to sample: its counts over every partition, or null when they cannot be had whole now (skipped). */
export interface SampledInstance {
  readonly id: string;
  readonly tenantId: string;
  counts(): Counts | null | Promise<Counts | null>;
}

/**
 * Samples each instance once a minute of the engine clock: the engine asks every few seconds of real time (and its
 * timer loop at once when an instance is new), so a clock moved by days in a test does not take a sample per minute
 * on the way. Each instance is sampled by one process only, with its counts over every partition: alone, the
 * process's own; in a cluster, the member holding the tenant's partition 0, adding the figures the other owners
 * published (server/cluster/counts.ts), so no part overwrites the whole.
 */
export class CountsSampler {
  /** The minute each instance was last sampled in. */
  private readonly sampledMinute = new Map<string, number>();
  /** The sampling under way: the next waits for it, so a caller told "already sampled" finds the sample written. */
  private sampling: Promise<void> = Promise.resolve();

  constructor(
    private readonly database: Database,
    /** Told each sample's counts and the sampling time once written (the engine's automatic experiment winners). */
    private readonly onSample?: (instanceId: string, counts: Counts, now: number) => Promise<void>,
  ) {}

  sampleIfDue(now: number, instances: SampledInstance[]): Promise<void> {
    const sample = this.sampling.then(() => this.sampleDue(now, instances));
    this.sampling = sample.catch(() => undefined); // the caller hears of a failure; the next sampling runs anyway
    return sample;
  }

  private async sampleDue(now: number, instances: SampledInstance[]): Promise<void> {
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    const due = instances.filter((instance) => (this.sampledMinute.get(instance.id) ?? Number.NEGATIVE_INFINITY) < minute);
    const live = new Set(instances.map((instance) => instance.id));
    for (const id of this.sampledMinute.keys()) if (!live.has(id)) this.sampledMinute.delete(id);
    if (due.length === 0) return;
    for (const instance of due) this.sampledMinute.set(instance.id, minute);
    const samples: CountsSampleWrite[] = [];
    const taken: [string, Counts][] = [];
    for (const instance of due) {
      const counts = await instance.counts(); // null (a partition between cluster members): this minute has no sample
      if (!counts) continue;
      samples.push({ tenantId: instance.tenantId, instanceId: instance.id, resolution: MINUTE_MS, at: minute, counts: JSON.stringify(sampled(counts)) });
      taken.push([instance.id, counts]);
    }
    await writeCountsSamples(this.database, samples);
    for (const [instanceId, counts] of taken) await this.onSample?.(instanceId, counts, now);
  }
}

/** Minute samples older than 2 days become the hour's last sample; hour samples older than 90 days go. */
export async function downsampleCountsHistory(database: Database, now: number): Promise<void> {
  const cutoff = BigInt(now - MINUTE_SAMPLES_KEPT_MS);
  const old = await database.db.countsSample.findMany({
    where: { resolution: MINUTE_MS, at: { lt: cutoff } },
    orderBy: [{ instanceId: 'asc' }, { at: 'asc' }],
  });
  const lastOfHour = new Map<string, CountsSampleWrite>();
  for (const row of old) {
    const hour = Math.floor(Number(row.at) / HOUR_MS) * HOUR_MS;
    lastOfHour.set(`${row.instanceId}\u0000${hour}`, { tenantId: row.tenantId, instanceId: row.instanceId, resolution: HOUR_MS, at: hour, counts: row.counts });
  }
  await writeCountsSamples(database, [...lastOfHour.values()]);
  await database.db.countsSample.deleteMany({ where: { resolution: MINUTE_MS, at: { lt: cutoff } } });
  await database.db.countsSample.deleteMany({ where: { resolution: HOUR_MS, at: { lt: BigInt(now - HOUR_SAMPLES_KEPT_MS) } } });
}

/**
 * The samples of an instance in [from, to], the last of each bucket of `resolution` (where only hour samples are left,
 * a finer resolution gets one point an hour); `steps` limits the per-step counts to those steps.
 */
export async function readCountsHistory(
  database: Database,
  tenantId: string,
  instanceId: string,
  query: { from: number; to: number; resolution: HistoryResolution; steps?: string[] },
): Promise<HistoryPoint[]> {
  const width = HISTORY_RESOLUTIONS[query.resolution];
  const rows = await database.db.countsSample.findMany({
    where: { tenantId, instanceId, at: { gte: BigInt(Math.floor(query.from / HOUR_MS) * HOUR_MS), lte: BigInt(query.to) } },
    orderBy: [{ at: 'asc' }, { resolution: 'desc' }],
  });
  const byBucket = new Map<number, { at: number; counts: string }>();
  for (const row of rows) {
    const at = Number(row.at);
    // An hour sample stands for its hour's last minute: a minute sample of that hour read after it is later.
    if (at < query.from && !(row.resolution === HOUR_MS && at + HOUR_MS > query.from)) continue;
    const bucket = Math.floor(at / width) * width;
    byBucket.set(bucket, { at: bucket, counts: row.counts });
  }
  const wanted = query.steps ? new Set(query.steps) : null;
  return [...byBucket.values()].map(({ at, counts }) => {
    const parsed = JSON.parse(counts) as SampledCounts;
    const steps = wanted ? Object.fromEntries(Object.entries(parsed.steps).filter(([step]) => wanted.has(step))) : parsed.steps;
    return { at: new Date(at).toISOString(), ...parsed, steps };
  });
}

/**
 * A 404 for a step the instance never had, as the step export answers: without it a typo reads as "nobody, ever".
 * Steps of the instance's earlier versions (before an update) are known too: their samples are still in the history.
 */
export async function requireSteps(
  database: Database,
  instance: { id: string; tenantId: string; workflowId: string; version: number },
  steps: string[],
): Promise<void> {
  const versions = await database.db.workflowVersion.findMany({
    where: { tenantId: instance.tenantId, workflowId: instance.workflowId, version: { lte: instance.version } },
    select: { definition: true },
  });
  const known = new Set(versions.flatMap((row) => (JSON.parse(row.definition) as { steps: { name: string }[] }).steps.map((step) => step.name)));
  const unknown = steps.find((step) => !known.has(step));
  if (unknown !== undefined) throw notFound(`Step "${unknown}" of instance ${instance.id}`);
}

/** GET …/instances/{iid}/counts/history: checks the instance and the range, then reads (default: the last 24 hours). */
export async function countsHistory(
  database: Database,
  tenantId: string,
  instanceId: string,
  query: { from?: string; to?: string; step?: string; resolution: HistoryResolution },
  now = Date.now(),
): Promise<{ instanceId: string; resolution: HistoryResolution; from: string; to: string; points: HistoryPoint[] }> {
  const instance = await requireInstance(database, tenantId, instanceId);
  const to = query.to ? Date.parse(query.to) : now;
  const from = query.from ? Date.parse(query.from) : to - 24 * HOUR_MS;
  if (from >= to) throw badRequest(`from (${new Date(from).toISOString()}) must be before to (${new Date(to).toISOString()})`, { path: 'from' });
  const points = Math.ceil((to - from) / HISTORY_RESOLUTIONS[query.resolution]);
  if (points > MAX_HISTORY_POINTS) {
    throw badRequest(
      `resolution: ${points} ${query.resolution}s from ${new Date(from).toISOString()} to ${new Date(to).toISOString()} exceed ` +
        `${MAX_HISTORY_POINTS} points; choose a coarser resolution or a shorter range`,
      { path: 'resolution' },
    );
  }
  const steps = query.step
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (steps) await requireSteps(database, instance, steps);
  const read = await readCountsHistory(database, tenantId, instanceId, { from, to, resolution: query.resolution, steps });
  return { instanceId, resolution: query.resolution, from: new Date(from).toISOString(), to: new Date(to).toISOString(), points: read };
}
