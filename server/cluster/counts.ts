// Counts of partitions a member does not own. Each owner publishes the counts of its partitions' shards of every
// running instance (ShardCounts: one row per instance and partition, stamped with the lease epoch) after its
// commits, coalesced per instance, with a NOTIFY on the cluster channel; every member's request thread keeps the
// latest figure of each partition (highest epoch, then version) and adds the ones its own engine does not hold to
// what that engine published. A partition with no figure at all is answered with a 503 partition_moving, never a zero.
import { AppError } from '../errors';
import type { ClusterCounts, HeldFigures, LocalFigure } from '../engine/cluster-port';
import { shardCounts, type InstanceRuntime } from '../engine/tenant';
import type { Counts } from '../engine/types';
import { ClusterSession, MAX_CHANNEL_PAYLOAD } from '../storage/cluster-session';
import type { Database } from '../storage/database';
import type { PostgresTarget } from '../storage/database-url';
import { publishShardCounts, readPublishedCounts, readShardFigures, type ShardCountsPublication } from '../storage/shard-counts';

/** A publisher waits this long after a change, so a busy instance costs one write per interval. */
const PUBLISH_EVERY_MS = 100;

type Figure = { epoch: number; version: number; counts: Counts };
export type CountsSignal = {
  kind: 'counts';
  tenantId: string;
  instanceId: string;
  parts?: [partition: number, epoch: number, version: number, counts: Counts][];
  stopped?: boolean;
};

/** A publication carries the figures of at most this many instances: one statement of a few hundred KB. */
const INSTANCES_PER_PUBLICATION = 256;

type DueFigures = { tenantId: string; instanceId: string; held: ReturnType<HeldFigures> };

/**
 * The engine side: writes and announces the figures of the partitions this member holds. The instances that changed
 * within one interval are published together, in one transaction (one multi-row upsert, one statement of NOTIFYs):
 * a minute's firing over 1,000 tenants made 1,000 transactions, each a WAL sync and a turn of the lock every NOTIFY
 * takes at commit, which queued on the pool in front of the firing's own commits (its last commit came 6–8 s late).
 */
export class ShardCountsPublisher {
  private readonly due = new Map<string, { tenantId: string; held: HeldFigures }>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastVersion = 0;

  constructor(
    private readonly database: Database,
    private readonly channel: string,
  ) {}

  /**
   * `held` is asked when the publication is due (the latest call's wins): the partitions of the instance this engine
   * holds then, with their lease epochs and shards' counts; null once the instance stopped.
   */
  schedule(tenantId: string, instanceId: string, held: HeldFigures): void {
    this.due.set(instanceId, { tenantId, held });
    this.timer ??= setTimeout(() => this.publishDue(), PUBLISH_EVERY_MS);
  }

  private publishDue(): void {
    this.timer = undefined;
    const due: DueFigures[] = [...this.due].map(([instanceId, { tenantId, held }]) => ({ tenantId, instanceId, held: held() }));
    this.due.clear();
    for (let at = 0; at < due.length; at += INSTANCES_PER_PUBLICATION) {
      const part = due.slice(at, at + INSTANCES_PER_PUBLICATION);
      this.publish(part).catch((error: Error) => console.warn(`[crowdflow] publishing counts of ${part.length} instances failed:`, error.message));
    }
  }

  private nextVersion(): number {
    this.lastVersion = Math.max(this.lastVersion + 1, Date.now() * 1000);
    return this.lastVersion;
  }

  /** An instance whose `held` is null is no longer running here (stopped): its figures are dropped everywhere. */
  private async publish(due: DueFigures[]): Promise<void> {
    const publication: ShardCountsPublication = { stopped: [], figures: [], notices: [] };
    const signals: CountsSignal[] = [];
    for (const { tenantId, instanceId, held } of due) {
      if (held === null) {
        publication.stopped.push({ tenantId, instanceId });
        signals.push({ kind: 'counts', tenantId, instanceId, stopped: true });
      } else if (held.length > 0) {
        const parts = held.map((h) => [h.partition, h.epoch, this.nextVersion(), h.counts] as [number, number, number, Counts]);
        for (const [partition, epoch, version, counts] of parts)
          publication.figures.push([tenantId, instanceId, partition, epoch, version, JSON.stringify(counts)]);
        signals.push({ kind: 'counts', tenantId, instanceId, parts });
      }
    }
    if (signals.length === 0) return;
    publication.notices = signals.map((signal) => {
      const payload = JSON.stringify(signal);
      // Too long for the channel: the members read the figures from the table instead.
      return payload.length > MAX_CHANNEL_PAYLOAD
        ? JSON.stringify({ kind: 'counts', tenantId: signal.tenantId, instanceId: signal.instanceId } satisfies CountsSignal)
        : payload;
    });
    await publishShardCounts(this.database, this.channel, publication);
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }
}

/** The request-thread side: the latest figure of every partition, kept current by the channel. */
export class ClusterCountsBoard implements ClusterCounts {
  private readonly figures = new Map<string, { tenantId: string; partitions?: number; parts: Map<number, Figure> }>();
  private readonly loading = new Map<string, Promise<void>>();
  private session: ClusterSession | undefined;
  private closed = false;

  constructor(
    private readonly database: Database,
    private readonly target: PostgresTarget,
    private readonly onChange: (instanceId: string, tenantId: string) => void,
    private readonly onOtherSignal: (payload: Record<string, unknown>) => void,
    /** The process's membership, released when the board closes (after the engine handed its partitions back). */
    private readonly membership?: { release(): Promise<void> },
  ) {}

  async start(): Promise<void> {
    const session = await ClusterSession.open(
      this.target,
      'counts channel',
      {
        failed: (error) => console.warn('[crowdflow] cluster channel connection lost:', error.message),
        ended: () => {
          // Signals missed while disconnected: forget every figure (they are read again on use) and listen again.
          this.figures.clear();
          if (!this.closed) setTimeout(() => void this.start().catch(() => undefined), 1_000).unref();
        },
        heard: (message) => {
          let payload: Record<string, unknown>;
          try {
            payload = JSON.parse(message) as Record<string, unknown>;
          } catch {
            return console.warn('[crowdflow] unreadable cluster signal on the counts channel');
          }
          if (payload.kind === 'counts') this.heard(payload as CountsSignal);
          else this.onOtherSignal(payload);
        },
      },
      () => this.closed,
    );
    await session.listen();
    this.session = session;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.session?.end();
    await this.membership?.release().catch((error: Error) => console.warn('[crowdflow] leaving the cluster failed:', error.message));
  }

  private heard(signal: CountsSignal): void {
    if (signal.stopped) this.figures.delete(signal.instanceId);
    else if (!signal.parts) {
      this.figures.delete(signal.instanceId);
      void this.load(signal.tenantId, signal.instanceId).catch(() => undefined);
    } else {
      const entry = this.entry(signal.tenantId, signal.instanceId);
      for (const [partition, epoch, version, counts] of signal.parts) keepNewer(entry.parts, partition, { epoch, version, counts });
    }
    this.onChange(signal.instanceId, signal.tenantId);
  }

  private entry(tenantId: string, instanceId: string) {
    let entry = this.figures.get(instanceId);
    if (!entry) this.figures.set(instanceId, (entry = { tenantId, parts: new Map() }));
    return entry;
  }

  private load(tenantId: string, instanceId: string): Promise<void> {
    let loading = this.loading.get(instanceId);
    if (!loading) {
      loading = (async () => {
        const published = await readShardFigures(this.database, tenantId, instanceId);
        if (!published) return;
        const entry = this.entry(tenantId, instanceId);
        entry.partitions = published.partitions;
        for (const { partition, epoch, version, counts } of published.figures)
          keepNewer(entry.parts, partition, { epoch, version, counts: JSON.parse(counts) as Counts });
      })().finally(() => this.loading.delete(instanceId));
      this.loading.set(instanceId, loading);
    }
    return loading;
  }

  /**
   * The instance's counts: what this member's engine holds plus the latest figure of every other partition. Null
   * when no member has published anything for it (not running, or not started yet): the caller asks its engine.
   */
  async counts(tenantId: string, instanceId: string, local: LocalFigure | undefined): Promise<Counts | null> {
    if (this.figures.get(instanceId)?.partitions === undefined) await this.load(tenantId, instanceId);
    const entry = this.figures.get(instanceId);
    if (!entry?.partitions || entry.tenantId !== tenantId) return null;
    const held = new Set(local?.held ?? []);
    const partitions = entry.partitions;
    const out: Counts = local ? structuredClone(local.counts) : { instanceId, total: 0, entered: 0, steps: {}, edges: {} };
    const moving: number[] = [];
    for (let p = 0; p < partitions; p++) {
      if (held.has(p)) continue;
      const figure = entry.parts.get(p);
      if (!figure) {
        moving.push(p);
        continue;
      }
      addCounts(out, figure.counts);
    }
    if (moving.length > 0) {
      throw new AppError(
        'partition_moving',
        `Partitions ${moving.join(', ')} of instance ${instanceId} are moving between cluster members and have no committed counts yet; retry shortly`,
        { partitions: moving, retryAfterSeconds: 1 },
      );
    }
    return out;
  }
}

/** Adds one partition's counts to `out` (the counts of the partitions added so far). */
function addCounts(out: Counts, part: Counts): void {
  out.total += part.total;
  out.entered += part.entered ?? 0; // figures published before entries were counted have none
  if (part.convertedFrom) {
    out.converted = (out.converted ?? 0) + (part.converted ?? 0);
    out.convertedFrom ??= {};
    for (const [step, n] of Object.entries(part.convertedFrom)) out.convertedFrom[step] = (out.convertedFrom[step] ?? 0) + n;
  }
  if (part.exitedFrom) {
    out.exited = (out.exited ?? 0) + (part.exited ?? 0);
    out.exitedFrom ??= {};
    for (const [step, n] of Object.entries(part.exitedFrom)) out.exitedFrom[step] = (out.exitedFrom[step] ?? 0) + n;
  }
  if (part.holdout) {
    out.holdout ??= { entered: 0 };
    out.holdout.entered += part.holdout.entered;
    if (part.holdout.converted !== undefined) out.holdout.converted = (out.holdout.converted ?? 0) + part.holdout.converted;
  }
  for (const [step, figures] of Object.entries(part.experiments ?? {})) {
    out.experiments ??= {};
    const sum = (out.experiments[step] ??= { paths: figures.paths.map(({ path }) => ({ path, entered: 0, converted: 0 })), winner: figures.winner });
    for (const { path, entered, converted } of figures.paths) {
      const into = sum.paths.find((p) => p.path === path);
      if (into) Object.assign(into, { entered: into.entered + entered, converted: into.converted + converted });
    }
  }
  for (const [step, n] of Object.entries(part.steps)) out.steps[step] = (out.steps[step] ?? 0) + n;
  for (const [edge, n] of Object.entries(part.edges)) out.edges[edge] = (out.edges[edge] ?? 0) + n;
}

/**
 * The instance's counts over every partition as committed: the shards of `held` partitions from memory, the others
 * from the figures their owners published (ShardCounts); null while a partition has no figure (between owners).
 */
export async function committedCounts(database: Database, instance: InstanceRuntime, held: readonly number[]): Promise<Counts | null> {
  const published = await readPublishedCounts(database, instance.record.tenantId, instance.id);
  const out: Counts = { instanceId: instance.id, total: 0, entered: 0, steps: {}, edges: {} };
  for (const name of instance.workflow.steps.keys()) out.steps[name] = 0;
  for (let p = 0; p < instance.shards.length; p++) {
    const counts = held.includes(p) ? shardCounts(instance, p) : published.has(p) ? (JSON.parse(published.get(p)!) as Counts) : null;
    if (!counts) return null;
    addCounts(out, counts);
  }
  return out;
}

function keepNewer(parts: Map<number, Figure>, partition: number, figure: Figure): void {
  const known = parts.get(partition);
  if (!known || known.epoch < figure.epoch || (known.epoch === figure.epoch && known.version < figure.version)) parts.set(partition, figure);
}
