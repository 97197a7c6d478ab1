// Cutting deliveries: a destination reads the tenant's journal after its cursor, as a notifications consumer does,
// and cuts the moves that go to it into deliveries of at most batchSize user ids: a 10M-user bulk move becomes
// 10M / batchSize requests, never one per user; single-user moves in a row share a delivery. Each round commits its
// deliveries and the destination's new cursor in ONE transaction, guarded by the cursor it read (compare-and-set),
// so a crash loses nothing, and two processes cutting the same destination cannot both commit the same moves.
// When journal retention deleted moves after the cursor before they were cut, the round first cuts a `lost` delivery
// telling the receiver which seqs may be missing (as a notifications reader is told in `lost`), once per watermark.
import { deserializeBitmap } from '../crowd/bitmap';
import { trimmedThrough } from '../notifications/journal-retention';
import { movesTo, type DestinationRow } from './destinations';
import type { Database } from '../storage/database';

/** Journal rows read per round. */
const ROWS_PER_ROUND = 500;
/** At most this many user ids are cut per round (≈ 2 MB of bodies, a short slice of the request thread); a larger move continues in the next round. */
const USERS_PER_ROUND = 200_000;

type JournalHead = {
  seq: bigint;
  instanceId: string;
  fromStep: string | null;
  toStep: string;
  user: bigint | null;
  count: bigint;
  leaveAction: string | null;
  enterAction: string | null;
  timeMs: bigint;
};

/** One move (or the part of a bulk move) in a delivery body. */
type MovePart = {
  seq: number;
  instanceId: string;
  from: string | null;
  to: string;
  enterAction: string | null;
  leaveAction: string | null;
  time: string;
  total: number;
  offset: number;
  count: number;
  /** The ids joined by commas, ready for the body. */
  users: string;
};

export type NewDelivery = {
  id: string;
  destinationId: string;
  fromSeq: bigint;
  fromOffset: number;
  status: 'pending';
  body: string;
  users: number;
  lostAfter?: bigint;
  createdAt: Date;
};

/** The offset of a `lost` delivery (whose fromSeq is the watermark): no delivery of moves has a negative one. */
export const LOST_OFFSET = -1;

export type CutRound = { deliveries: NewDelivery[]; cursor: bigint; cursorUsers: number; lostThrough: bigint; readRows: number };

/**
 * The users of the bulk moves decoded last: a 10M-user move is cut over ~50 rounds (and for each destination), and
 * decoding its bitmap costs far more than a round's cut. Holds two moves (~40 MB each at 10M users).
 */
export class DecodedMoves {
  private readonly entries: { seq: bigint; users: Uint32Array }[] = [];

  constructor(private readonly database: Database) {}

  async users(seq: bigint): Promise<Uint32Array> {
    const hit = this.entries.find((entry) => entry.seq === seq);
    if (hit) return hit.users;
    const row = await this.database.db.journal.findUnique({ where: { seq }, select: { bitmap: true } });
    const users = row?.bitmap ? deserializeBitmap(row.bitmap).toUint32Array() : new Uint32Array(0);
    this.entries.unshift({ seq, users });
    this.entries.length = Math.min(this.entries.length, 2);
    return users;
  }
}

/**
 * Cuts one round for `destination` (as read from its row) without writing anything. `readRows` is 0 when the
 * journal holds nothing after the cursor; a round with a `lost` delivery is worth committing even then.
 */
export async function cutRound(
  database: Database,
  destination: DestinationRow,
  tenantName: string,
  now: number,
  decoded = new DecodedMoves(database),
): Promise<CutRound> {
  const rows: JournalHead[] = await database.db.journal.findMany({
    where: { tenantId: destination.tenantId, seq: { gt: destination.cursor } },
    orderBy: { seq: 'asc' },
    take: ROWS_PER_ROUND,
    select: { seq: true, instanceId: true, fromStep: true, toStep: true, user: true, count: true, leaveAction: true, enterAction: true, timeMs: true },
  });
  const round: CutRound = {
    deliveries: [],
    cursor: destination.cursor,
    cursorUsers: destination.cursorUsers,
    lostThrough: destination.lostThrough,
    readRows: rows.length,
  };
  // Read after the rows: whatever retention deleted before that read is at or below this watermark.
  const trimmed = BigInt(await trimmedThrough(database, destination.tenantId));
  // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
  const reported = destination.cursor > destination.lostThrough ? destination.cursor : destination.lostThrough;
  if (trimmed > reported) {
    round.deliveries.push(lostDelivery(destination, tenantName, reported, trimmed, now));
    round.lostThrough = trimmed;
  }
  const open: { parts: MovePart[]; users: number; fromSeq: bigint; fromOffset: number } = { parts: [], users: 0, fromSeq: 0n, fromOffset: 0 };
  const close = () => {
    if (open.users === 0) return;
    const id = `${destination.id}-${open.fromSeq}-${open.fromOffset}`;
    const body = deliveryBody(id, tenantName, destination.name, open.parts);
    round.deliveries.push({
      id,
      destinationId: destination.id,
      fromSeq: open.fromSeq,
      fromOffset: open.fromOffset,
      status: 'pending',
      body,
      users: open.users,
      createdAt: new Date(now),
    });
    Object.assign(open, { parts: [], users: 0 });
  };
  let budget = USERS_PER_ROUND;
  for (const row of rows) {
    if (!movesTo(destination, row.enterAction)) {
      Object.assign(round, { cursor: row.seq, cursorUsers: 0 });
      continue;
    }
    if (budget === 0) break;
    const users = row.user === null ? await decoded.users(row.seq) : Uint32Array.of(Number(row.user));
    // The first matching row after the cursor may be partly cut already (round.cursorUsers of its users).
    let offset = round.cursorUsers;
    while (offset < users.length && budget > 0) {
      if (open.users === 0) Object.assign(open, { fromSeq: row.seq, fromOffset: offset });
      const take = Math.min(destination.batchSize - open.users, users.length - offset, budget);
      open.parts.push(movePart(row, users.length, offset, users.subarray(offset, offset + take)));
      open.users += take;
      offset += take;
      budget -= take;
      if (open.users === destination.batchSize) close();
    }
    if (offset < users.length) {
      // Out of budget mid-move: the cursor stays just before this row, with the users cut so far.
      Object.assign(round, { cursor: row.seq - 1n, cursorUsers: offset });
      break;
    }
    Object.assign(round, { cursor: row.seq, cursorUsers: 0 });
  }
  close();
  return round;
}

/** Commits a round: its deliveries and the new cursor, only if the cursor is still the one the round read. */
export async function commitRound(database: Database, destination: DestinationRow, round: CutRound): Promise<boolean> {
  return database.db.$transaction(async (tx) => {
    const moved = await tx.webhookDestination.updateMany({
      where: { id: destination.id, cursor: destination.cursor, cursorUsers: destination.cursorUsers, lostThrough: destination.lostThrough },
      data: { cursor: round.cursor, cursorUsers: round.cursorUsers, lostThrough: round.lostThrough },
    });
    if (moved.count !== 1) return false;
    if (round.deliveries.length) await tx.webhookDelivery.createMany({ data: round.deliveries });
    return true;
  });
}

/** Tells the receiver that moves with seq in (after, through] may never reach it: retention deleted them first. */
function lostDelivery(destination: DestinationRow, tenant: string, after: bigint, through: bigint, now: number): NewDelivery {
  const id = `${destination.id}-${through}-lost`;
  const head = `{"id":${JSON.stringify(id)},"type":"lost","tenant":${JSON.stringify(tenant)},"destination":${JSON.stringify(destination.name)}`;
  return {
    id,
    destinationId: destination.id,
    fromSeq: through,
    fromOffset: LOST_OFFSET,
    status: 'pending',
    body: `${head},"lost":{"after":${after},"through":${through}}}`,
    users: 0,
    lostAfter: after,
    createdAt: new Date(now),
  };
}

function movePart(row: JournalHead, total: number, offset: number, users: Uint32Array): MovePart {
  return {
    seq: Number(row.seq),
    instanceId: row.instanceId,
    from: row.fromStep,
    to: row.toStep,
    enterAction: row.enterAction,
    leaveAction: row.leaveAction,
    time: new Date(Number(row.timeMs)).toISOString(),
    total,
    offset,
    count: users.length,
    users: users.join(','),
  };
}

/**
 * The JSON body of a delivery. Written by hand around the user ids (joined straight from the typed array) so a
 * 100,000-id batch is not first turned into 100,000 JS numbers for JSON.stringify.
 */
function deliveryBody(id: string, tenant: string, destination: string, parts: MovePart[]): string {
  const moves = parts.map(({ users, ...move }) => `${JSON.stringify(move).slice(0, -1)},"users":[${users}]}`);
  return `{"id":${JSON.stringify(id)},"type":"moves","tenant":${JSON.stringify(tenant)},"destination":${JSON.stringify(destination)},"moves":[${moves.join(',')}]}`;
}
