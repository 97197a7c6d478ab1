// Quiet hours where deliveries are cut (issue 37 §3), after frequency caps (./capping.ts): the users of an action move
// whose zone is inside the window now are grouped by zone (the profile index's equality bitmap per zone value, as
// local-time timers do: server/profiles/zones.ts, asked of the engine thread, which holds the index), and each zone's
// group is one QuietDelivery row, held until the window opens in that zone (or dropped, if the rule says so). Never a
// row or a loop per user. The rows are written in
// the round's transaction, beside its deliveries and cursor, so a crash or a lost race decides again from what is
// committed. The users still move (the engine is not involved); caps counted the delivery when it was due.
//
// A held row is sent by releaseDueQuiet() when its `releaseAt` has come on the pump's clock: its deliveries (ids
// `<destination>-<seq>-q<offset>`, fixed by the row, so a second release of it can only fail) and its status `sent`
// in ONE transaction, guarded by the row still being `held`.
import { randomBytes } from 'node:crypto';
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../crowd/bitmap';
import { quietEndsAt } from '../../core/model/quiet-hours';
import type { QuietHoursRule } from '../../core/model/workflow';
import type { ProfileCalls } from '../profiles/calls';
import type { QuietZoneGroups } from '../profiles/zones';
import type { Database } from '../storage/database';
import { replaceQuietRows } from '../storage/webhook-rows';
import type { DestinationKey, DestinationRow } from './destinations';
import { QuietRules } from './quiet-rules';

/** The journal row fields a quiet-hours decision reads and a released delivery's body repeats. */
export type QuietMove = {
  seq: bigint;
  instanceId: string;
  fromStep: string | null;
  toStep: string;
  enterAction: string | null;
  leaveAction: string | null;
  timeMs: bigint;
};

export type QuietStatus = 'held' | 'dropped' | 'sent';

type NewQuiet = {
  id: string;
  tenantId: string;
  destinationId: string;
  seq: bigint;
  bulk: boolean;
  offsetBase: number;
  instanceId: string;
  fromStep: string | null;
  step: string;
  enterAction: string | null;
  leaveAction: string | null;
  zone: string;
  users: Buffer<ArrayBuffer>;
  count: number;
  timeMs: bigint;
  status: QuietStatus;
  releaseAt: bigint;
};

const newId = () => `qd_${randomBytes(8).toString('hex')}`;

/** Groups users by the zones inside a window, where the profile index is (EngineHandle.profiles on the request thread). */
export type ZoneGrouping = Pick<ProfileCalls, 'quietZoneGroups'>;

/** Quiet hours in one round of one destination, at the round's `now`, and what the round held or dropped. */
export class RoundQuiet {
  private readonly rules: QuietRules;
  private readonly bulk: NewQuiet[] = [];
  /** The round's single-user moves held or dropped, by instance, steps, actions and zone. */
  private readonly singles = new Map<string, Omit<NewQuiet, 'users'> & { users: RoaringBitmap32 }>();
  /** Deliveries (users) held and dropped in this round. */
  held = 0;
  dropped = 0;

  constructor(
    database: Database,
    private readonly destination: DestinationRow,
    private readonly now: number,
    private readonly zones: ZoneGrouping,
  ) {
    this.rules = new QuietRules(database, destination.tenantId);
  }

  /** The move's users in a zone inside the window now, one bitmap per zone (bytes), and the others; undefined when none is. */
  private async quietGroups(move: QuietMove, users: RoaringBitmap32): Promise<{ rule: QuietHoursRule; found: QuietZoneGroups } | undefined> {
    const rule = await this.rules.of(move.instanceId);
    if (!rule) return undefined;
    const found = await this.zones.quietZoneGroups(this.destination.tenantId, {
      attribute: rule.zoneAttribute,
      fallback: rule.defaultZone,
      start: rule.start,
      end: rule.end,
      now: this.now,
      users: serializeBitmap(users),
    });
    return found.groups.length ? { rule, found } : undefined;
  }

  private row(move: QuietMove, rule: QuietHoursRule, zone: string, bulk: boolean, offsetBase: number): Omit<NewQuiet, 'users' | 'count'> {
    const hold = rule.mode === 'hold';
    return {
      id: newId(),
      tenantId: this.destination.tenantId,
      destinationId: this.destination.id,
      seq: move.seq,
      bulk,
      offsetBase,
      instanceId: move.instanceId,
      fromStep: move.fromStep,
      step: move.toStep,
      enterAction: move.enterAction,
      leaveAction: move.leaveAction,
      zone,
      timeMs: move.timeMs,
      status: hold ? 'held' : 'dropped',
      releaseAt: BigInt(hold ? quietEndsAt(rule, this.now, zone) : this.now),
    };
  }

  private tally(rule: QuietHoursRule, users: number): void {
    if (rule.mode === 'hold') this.held += users;
    else this.dropped += users;
  }

  /** Decides a single-user move: true when quiet hours hold (or drop) its delivery, false when it goes now. */
  async holdUser(move: QuietMove, user: number): Promise<boolean> {
    const quiet = await this.quietGroups(move, RoaringBitmap32.of(user));
    if (!quiet) return false;
    const { rule } = quiet;
    const [{ zone }] = quiet.found.groups;
    const key = [move.instanceId, move.fromStep, move.toStep, move.enterAction, move.leaveAction, zone].join('\n');
    let entry = this.singles.get(key);
    if (!entry) {
      // The group's first move names it (its seq, time and ids): no other group of any round starts at that move.
      entry = { ...this.row(move, rule, zone, false, 0), users: new RoaringBitmap32(), count: 0 };
      this.singles.set(key, entry);
    }
    entry.users.add(user);
    entry.count++;
    this.tally(rule, 1);
    return true;
  }

  /**
   * Decides a bulk move: the users delivered to now, and the ids of the rows holding the others (in the order the
   * later rounds of this move read them back, ./cut.ts DecodedMoves.resumed). One AND per quiet zone, one OR, one ANDNOT.
   */
  async decideBulk(move: QuietMove, users: RoaringBitmap32): Promise<{ sendNow: RoaringBitmap32; ids: string[] }> {
    const quiet = await this.quietGroups(move, users);
    if (!quiet) return { sendNow: users, ids: [] };
    const ids: string[] = [];
    let offsetBase = 0;
    for (const group of quiet.found.groups) {
      const row = { ...this.row(move, quiet.rule, group.zone, true, offsetBase), users: Buffer.from(group.users), count: group.count };
      this.bulk.push(row);
      ids.push(row.id);
      offsetBase += group.count;
      this.tally(quiet.rule, group.count);
    }
    return { sendNow: quiet.found.rest ? deserializeBitmap(quiet.found.rest) : new RoaringBitmap32(), ids };
  }

  /** What the round held and dropped, for its commit. */
  rows(): NewQuiet[] {
    return [...this.bulk, ...[...this.singles.values()].map((single) => ({ ...single, users: serializeBitmap(single.users) }))];
  }
}

/** The users quiet hours took out of a bulk move for a destination (its first round's decision), with the rows' ids. */
export async function quietDecision(
  database: Database,
  destination: DestinationKey,
  seq: bigint,
): Promise<{ ids: string[]; users: RoaringBitmap32 } | undefined> {
  const rows = await database.db.quietDelivery.findMany({
    where: { tenantId: destination.tenantId, destinationId: destination.id, seq, bulk: true },
    orderBy: { offsetBase: 'asc' },
    select: { id: true, users: true },
  });
  if (rows.length === 0) return undefined;
  return { ids: rows.map((row) => row.id), users: RoaringBitmap32.orMany(rows.map((row) => deserializeBitmap(row.users))) };
}

/** The users of a held row not sent yet: a row being released in parts has sent its smallest `releasedUsers` ids. */
function stillWaiting(row: { users: Uint8Array; releasedUsers: number }): RoaringBitmap32 {
  const users = deserializeBitmap(row.users);
  if (row.releasedUsers > 0) users.removeRange(0, (users.select(row.releasedUsers - 1) ?? 0) + 1);
  return users;
}

/** Per step of an instance: users waiting for quiet hours to end there (each once) and deliveries quiet hours dropped. */
export async function quietCounts(database: Database, tenantId: string, instanceId: string): Promise<Record<string, { waiting: number; dropped: number }>> {
  const rows = await database.db.quietDelivery.findMany({
    where: { tenantId, instanceId, status: { in: ['held', 'dropped'] } },
    select: { step: true, status: true, users: true, count: true, releasedUsers: true },
  });
  const byStep = new Map<string, { held: RoaringBitmap32[]; dropped: number }>();
  for (const row of rows) {
    const entry = byStep.get(row.step) ?? { held: [], dropped: 0 };
    if (row.status === 'held') entry.held.push(stillWaiting(row));
    else entry.dropped += row.count;
    byStep.set(row.step, entry);
  }
  const out: Record<string, { waiting: number; dropped: number }> = {};
  for (const [step, entry] of byStep) out[step] = { waiting: RoaringBitmap32.orMany(entry.held).size, dropped: entry.dropped };
  return out;
}

/** The users waiting for quiet hours to end at a step (each once): the `users=quiet` step export. */
export async function quietStepUsers(database: Database, tenantId: string, instanceId: string, step: string): Promise<RoaringBitmap32> {
  const rows = await database.db.quietDelivery.findMany({
    where: { tenantId, instanceId, step, status: 'held' },
    select: { users: true, releasedUsers: true },
  });
  return RoaringBitmap32.orMany(rows.map(stillWaiting));
}

/**
 * Sent rows are kept while a bulk move they belong to may still be cut (its later rounds read them back); once the
 * destination's cursor is past their move, they go (the pump's sweep).
 */
export async function dropSentQuiet(database: Database): Promise<void> {
  const groups = await database.db.quietDelivery.groupBy({ by: ['tenantId', 'destinationId'], where: { status: 'sent' } });
  for (const { tenantId, destinationId } of groups) {
    const destination = await database.db.webhookDestination.findUnique({ where: { id: destinationId, tenantId }, select: { cursor: true } });
    await database.db.quietDelivery.deleteMany({
      where: { tenantId, destinationId, status: 'sent', ...(destination ? { seq: { lte: destination.cursor } } : {}) },
    });
  }
}

/**
 * Keeps the counts' read of dropped deliveries short (the pump's sweep): per destination, instance, step and zone, the
 * dropped rows of moves the destination has cut through (no round reads them back) become one row, their users OR'ed
 * and their deliveries added. Held rows are left alone: each is sent at its own opening.
 */
export async function compactDroppedQuiet(database: Database): Promise<number> {
  const groups = await database.db.quietDelivery.groupBy({
    by: ['tenantId', 'destinationId', 'instanceId', 'step', 'zone'],
    where: { status: 'dropped' },
    _count: { id: true },
    having: { id: { _count: { gt: 1 } } },
  });
  let merged = 0;
  for (const group of groups) {
    const { tenantId } = group;
    const destination = await database.db.webhookDestination.findUnique({ where: { id: group.destinationId, tenantId }, select: { cursor: true } });
    const rows = await database.db.quietDelivery.findMany({
      where: {
        tenantId,
        destinationId: group.destinationId,
        instanceId: group.instanceId,
        step: group.step,
        zone: group.zone,
        status: 'dropped',
        ...(destination ? { seq: { lte: destination.cursor } } : {}),
      },
    });
    if (rows.length < 2) continue;
    const [first] = rows;
    const users = RoaringBitmap32.orMany(rows.map((row) => deserializeBitmap(row.users)));
    // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
    const latest = rows.reduce((seq, row) => (row.seq > seq ? row.seq : seq), 0n);
    await replaceQuietRows(
      database,
      rows.map((row) => row.id),
      {
        ...first,
        id: newId(),
        seq: latest,
        bulk: false,
        offsetBase: 0,
        users: serializeBitmap(users),
        count: rows.reduce((sum, row) => sum + row.count, 0),
      },
    );
    merged += rows.length;
  }
  return merged;
}
