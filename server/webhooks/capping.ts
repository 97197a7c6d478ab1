// Frequency caps where deliveries are cut (./cut.ts): one round of one destination loads the caps that apply to it,
// the windows of those caps its moves fall in, and decides each action move as bitmap arithmetic (./cap-bitmaps.ts).
// The round commits what it counted (each window compare-and-set on its version) and what it skipped (CappedDelivery)
// in the same transaction as its deliveries and cursor: a crash or a lost race decides again from what is committed.
// The engine is not involved: a capped user moves like any other; only the delivery is skipped.
import { randomBytes } from 'node:crypto';
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../crowd/bitmap';
import { applyCaps, CapLevels } from './cap-bitmaps';
import type { CapExempt } from './caps';
import { isActionFor, type DestinationKey, type DestinationRow } from './destinations';
import type { Database } from '../storage/database';
import { replaceCappedRows, type CapWindowWrite } from '../storage/webhook-rows';

/** The journal row fields a cap decision reads. */
export type CapMove = { seq: bigint; instanceId: string; toStep: string; enterAction: string | null; timeMs: bigint; user: bigint | null };

type Cap = { id: string; maxDeliveries: number; windowMs: bigint; exempt: CapExempt };
type Window = { capId: string; bucket: bigint; levels: CapLevels; version: number | null; dirty: boolean };

export type NewCapped = {
  id: string;
  tenantId: string;
  destinationId: string;
  seq: bigint | null;
  instanceId: string;
  step: string;
  users: Buffer<ArrayBuffer>;
  count: number;
  timeMs: bigint;
};

/** The caps of one round of one destination, and what the round decided. */
export class RoundCaps {
  private readonly windows = new Map<string, Window>();
  private readonly journeys = new Map<string, string | null>();
  /** Single-user moves skipped in this round, by instance and step. */
  private readonly singles = new Map<string, { instanceId: string; step: string; users: RoaringBitmap32; skipped: number; timeMs: bigint }>();
  private readonly bulk: NewCapped[] = [];
  /** Deliveries skipped in this round (users). */
  skipped = 0;

  private constructor(
    private readonly database: Database,
    private readonly destination: DestinationRow,
    private readonly caps: Cap[],
  ) {}

  /** The caps that count deliveries to `destination` (its own and those of every destination); undefined when none. */
  static async load(database: Database, destination: DestinationRow): Promise<RoundCaps | undefined> {
    const rows = await database.db.frequencyCap.findMany({
      where: { tenantId: destination.tenantId, OR: [{ destination: null }, { destination: destination.name }] },
      orderBy: { name: 'asc' },
    });
    if (rows.length === 0) return undefined;
    const caps = rows.map((row) => ({ id: row.id, maxDeliveries: row.maxDeliveries, windowMs: row.windowMs, exempt: JSON.parse(row.exempt) as CapExempt }));
    return new RoundCaps(database, destination, caps);
  }

  /** Whether this move reaches the destination as an action (its step's enter action names it), which caps count. */
  isAction(move: CapMove): boolean {
    return isActionFor(this.destination, move.enterAction);
  }

  /** The windows of the caps that apply to the move (not exempt), each at the move's time. */
  private async windowsFor(move: CapMove): Promise<CapLevels[]> {
    const journey = await this.journey(move.instanceId);
    const out: CapLevels[] = [];
    for (const cap of this.caps) {
      if (journey !== null && cap.exempt.journeys.includes(journey)) continue;
      if (journey !== null && cap.exempt.steps.some((s) => s.journey === journey && s.step === move.toStep)) continue;
      out.push((await this.window(cap, move.timeMs / cap.windowMs)).levels);
    }
    return out;
  }

  private async window(cap: Cap, bucket: bigint): Promise<Window> {
    const key = `${cap.id}:${bucket}`;
    let window = this.windows.get(key);
    if (!window) {
      const row = await this.database.db.frequencyCapWindow.findUnique({
        where: { tenantId_capId_bucket: { tenantId: this.destination.tenantId, capId: cap.id, bucket } },
      });
      window = {
        capId: cap.id,
        bucket,
        levels: row ? CapLevels.decode(row.levels).resized(cap.maxDeliveries) : CapLevels.empty(cap.maxDeliveries),
        version: row ? row.version : null,
        dirty: false,
      };
      this.windows.set(key, window);
    }
    return window;
  }

  private async journey(instanceId: string): Promise<string | null> {
    if (!this.journeys.has(instanceId)) this.journeys.set(instanceId, await journeyName(this.database, this.destination.tenantId, instanceId));
    return this.journeys.get(instanceId) ?? null;
  }

  private markDirty(move: CapMove): void {
    for (const cap of this.caps) {
      const window = this.windows.get(`${cap.id}:${move.timeMs / cap.windowMs}`);
      if (window) window.dirty = true;
    }
  }

  /** Decides a single-user move: true when it is delivered (and counted), false when a cap skips it. */
  async decideUser(move: CapMove, user: number): Promise<boolean> {
    const windows = await this.windowsFor(move);
    if (windows.length === 0) return true;
    const { capped } = applyCaps(RoaringBitmap32.of(user), windows);
    this.markDirty(move);
    if (capped.isEmpty) return true;
    const key = `${move.instanceId}\n${move.toStep}`;
    const entry = this.singles.get(key) ?? { instanceId: move.instanceId, step: move.toStep, users: new RoaringBitmap32(), skipped: 0, timeMs: move.timeMs };
    entry.users.add(user);
    entry.skipped++;
    this.singles.set(key, entry);
    this.skipped++;
    return false;
  }

  /**
   * Decides a bulk move: the users delivered to, and (when a cap skipped some) the id of the decision row that the
   * later rounds of this move read back (./cut.ts DecodedMoves.delivered).
   */
  async decideBulk(move: CapMove, users: RoaringBitmap32): Promise<{ delivered: RoaringBitmap32; decisionId?: string }> {
    const windows = await this.windowsFor(move);
    if (windows.length === 0) return { delivered: users };
    const { delivered, capped } = applyCaps(users, windows);
    this.markDirty(move);
    if (capped.isEmpty) return { delivered };
    const id = `cd_${randomBytes(8).toString('hex')}`;
    this.bulk.push(this.row(id, move.seq, move.instanceId, move.toStep, capped, move.timeMs));
    this.skipped += capped.size;
    return { delivered, decisionId: id };
  }

  /** `count`: deliveries skipped (a user skipped twice in a round's single moves at one step is in `users` once). */
  private row(id: string, seq: bigint | null, instanceId: string, step: string, users: RoaringBitmap32, timeMs: bigint, count = users.size): NewCapped {
    return { id, tenantId: this.destination.tenantId, destinationId: this.destination.id, seq, instanceId, step, users: serializeBitmap(users), count, timeMs };
  }

  /** What the round counted (each window it changed, with the version it read) and skipped, for its commit. */
  rows(): { capWindows: CapWindowWrite[]; capped: NewCapped[] } {
    const capWindows = [...this.windows.values()]
      .filter((window) => window.dirty)
      .map(({ capId, bucket, levels, version }) => ({ capId, bucket, levels: levels.encode(), version }));
    const capped = [...this.bulk];
    for (const single of this.singles.values())
      capped.push(this.row(`cd_${randomBytes(8).toString('hex')}`, null, single.instanceId, single.step, single.users, single.timeMs, single.skipped));
    return { capWindows, capped };
  }
}

/** The name of the journey (workflow) an instance runs, which exemptions name; null for an instance not found. */
async function journeyName(database: Database, tenantId: string, instanceId: string): Promise<string | null> {
  const instance = await database.db.instance.findFirst({ where: { id: instanceId, tenantId }, select: { workflowId: true } });
  if (!instance) return null;
  const workflow = await database.db.workflow.findUnique({ where: { id: instance.workflowId, tenantId }, select: { name: true } });
  return workflow?.name ?? null;
}

/** The users a cap skipped in a bulk move for a destination (the decision of its first round), if any. */
export async function bulkDecision(database: Database, destination: DestinationKey, seq: bigint): Promise<{ id: string; capped: RoaringBitmap32 } | undefined> {
  const row = await database.db.cappedDelivery.findFirst({
    where: { tenantId: destination.tenantId, destinationId: destination.id, seq },
    select: { id: true, users: true },
  });
  return row ? { id: row.id, capped: deserializeBitmap(row.users) } : undefined;
}

/** Per step of an instance: users a cap skipped a delivery of there (each once) and deliveries skipped. Empty: none. */
export async function cappedCounts(database: Database, tenantId: string, instanceId: string): Promise<Record<string, { users: number; skipped: number }>> {
  const rows = await database.db.cappedDelivery.findMany({ where: { tenantId, instanceId }, select: { step: true, seq: true, users: true, count: true } });
  const byStep = new Map<string, { rows: typeof rows; skipped: number }>();
  for (const row of rows) {
    const entry = byStep.get(row.step) ?? { rows: [], skipped: 0 };
    entry.rows.push(row);
    entry.skipped += row.count;
    byStep.set(row.step, entry);
  }
  const out: Record<string, { users: number; skipped: number }> = {};
  for (const [step, entry] of byStep) {
    // One bulk move's users are distinct (its count); rows of several moves are OR'ed: a user skipped twice counts once.
    const [only] = entry.rows;
    const users =
      entry.rows.length === 1 && only.seq !== null ? only.count : RoaringBitmap32.orMany(entry.rows.map((row) => deserializeBitmap(row.users))).size;
    out[step] = { users, skipped: entry.skipped };
  }
  return out;
}

/** The users a cap skipped a delivery of at a step (each once): the "capped here" export. */
export async function cappedStepUsers(database: Database, tenantId: string, instanceId: string, step: string): Promise<RoaringBitmap32> {
  const rows = await database.db.cappedDelivery.findMany({ where: { tenantId, instanceId, step }, select: { users: true } });
  return RoaringBitmap32.orMany(rows.map((row) => deserializeBitmap(row.users)));
}

/**
 * Keeps the counts' read of CappedDelivery short (the pump's sweep): per destination, instance and step, the rows of
 * single-user moves and of bulk moves cut through (seq at or below the destination's cursor: no round resumes them)
 * become one row, their users OR'ed and their skips added. A bulk move still being cut keeps its own row.
 */
export async function compactCapped(database: Database): Promise<number> {
  const groups = await database.db.cappedDelivery.groupBy({
    by: ['tenantId', 'destinationId', 'instanceId', 'step'],
    _count: { id: true },
    having: { id: { _count: { gt: 1 } } },
  });
  let merged = 0;
  for (const group of groups) {
    const { tenantId } = group;
    const destination = await database.db.webhookDestination.findUnique({ where: { id: group.destinationId, tenantId }, select: { cursor: true } });
    const done = destination ? { OR: [{ seq: null }, { seq: { lte: destination.cursor } }] } : {};
    const rows = await database.db.cappedDelivery.findMany({
      where: { tenantId, destinationId: group.destinationId, instanceId: group.instanceId, step: group.step, ...done },
    });
    if (rows.length < 2) continue;
    const users = RoaringBitmap32.orMany(rows.map((row) => deserializeBitmap(row.users)));
    const [first] = rows;
    await replaceCappedRows(
      database,
      rows.map((row) => row.id),
      {
        id: `cd_${randomBytes(8).toString('hex')}`,
        tenantId: first.tenantId,
        destinationId: first.destinationId,
        seq: null,
        instanceId: first.instanceId,
        step: first.step,
        users: serializeBitmap(users),
        count: rows.reduce((sum, row) => sum + row.count, 0),
        // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
        timeMs: rows.reduce((latest, row) => (row.timeMs > latest ? row.timeMs : latest), 0n),
      },
    );
    merged += rows.length;
  }
  return merged;
}

/** Drops windows no move will be counted in any more: older than two windows before `now` (the pump's sweep). */
export async function dropOldCapWindows(database: Database, now: number): Promise<void> {
  const caps = await database.db.frequencyCap.findMany({ select: { id: true, tenantId: true, windowMs: true } });
  for (const cap of caps)
    await database.db.frequencyCapWindow.deleteMany({ where: { tenantId: cap.tenantId, capId: cap.id, bucket: { lt: BigInt(now) / cap.windowMs - 2n } } });
}
