// Cutting deliveries: a destination reads the tenant's journal after its cursor, as a notifications consumer does,
// and cuts the moves that go to it into deliveries of at most batchSize user ids: a 10M-user bulk move becomes
// 10M / batchSize requests, never one per user; single-user moves in a row share a delivery. Each round commits its
// deliveries and the destination's new cursor in ONE transaction, guarded by the cursor it read (compare-and-set),
// so a crash loses nothing, and two processes cutting the same destination cannot both commit the same moves.
// When journal retention deleted moves after the cursor before they were cut, the round first cuts a `lost` delivery
// telling the receiver which seqs may be missing (as a notifications reader is told in `lost`), once per watermark.
import { deserializeBitmap, RoaringBitmap32 } from '../crowd/bitmap';
import { trimmedThrough } from '../storage/journal-trim';
import { commitCutRound } from '../storage/webhook-rows';
import { bulkDecision, RoundCaps } from './capping';
import { isActionFor, movesTo, type DestinationKey, type DestinationRow } from './destinations';
import { HoldoutPlans, withoutHeldOut } from './holdout';
import { isHeldOut, type HoldoutPlan } from '../../core/model/holdout';
import { quietDecision, RoundQuiet, type ZoneGrouping } from './quiet-holding';
import { profileCalls } from '../profiles/calls';
import type { Database } from '../storage/database';

/** Journal rows read per round. */
const ROWS_PER_ROUND = 500;
/** At most this many user ids are cut per round (≈ 2 MB of bodies, a short slice of the request thread); a larger move continues in the next round. */
const USERS_PER_ROUND = 200_000;

type JournalHead = {
  tenantId: string;
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

/** A journal row as DecodedMoves reads it: by its seq, and its tenant, which every statement on the journal names. */
type MoveKey = Pick<JournalHead, 'tenantId' | 'seq'>;

/** One move (or the part of a bulk move) in a delivery body. */
export type MovePart = {
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
  tenantId: string;
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

export type CutRound = {
  deliveries: NewDelivery[];
  cursor: bigint;
  cursorUsers: number;
  lostThrough: bigint;
  readRows: number;
  /** The frequency caps' decisions of this round (./capping.ts), written with it; absent when no cap applies. */
  caps?: RoundCaps;
  /** What quiet hours held or dropped in this round (./quiet-holding.ts), written with it. */
  quiet: RoundQuiet;
};

/** A bulk move decoded: all its users, and (for an instance with a holdout) those not held out, `treated`. */
type DecodedMove = { seq: bigint; bitmap: RoaringBitmap32; users?: Uint32Array; treated?: { bitmap: RoaringBitmap32; users?: Uint32Array } };

/**
 * The users of the bulk moves decoded last: a 10M-user move is cut over ~50 rounds (and for each destination), and
 * decoding its bitmap costs far more than a round's cut. Holds two moves (~40 MB each at 10M users), and the users
 * delivered of the last two moves a frequency cap or quiet hours cut down (keyed by their decisions' ids: a decision of
 * a round that did not commit is never read back). With a holdout plan (an action move of an instance that holds users out), the
 * users are those not held out (./holdout.ts).
 */
export class DecodedMoves {
  private readonly entries: DecodedMove[] = [];
  private readonly delivered: { id: string; users: Uint32Array }[] = [];
  readonly holdouts: HoldoutPlans;

  /** `zones`: where quiet hours group users by zone (the engine's profile calls; by default this thread's index). */
  constructor(
    private readonly database: Database,
    readonly zones: ZoneGrouping = profileCalls(database),
  ) {
    this.holdouts = new HoldoutPlans(database);
  }

  async bitmap(move: MoveKey, holdout: HoldoutPlan | null = null): Promise<RoaringBitmap32> {
    const entry = await this.entry(move);
    return holdout ? this.treated(entry, holdout).bitmap : entry.bitmap;
  }

  async users(move: MoveKey, holdout: HoldoutPlan | null = null): Promise<Uint32Array> {
    const entry = await this.entry(move);
    if (holdout) {
      const treated = this.treated(entry, holdout);
      treated.users ??= treated.bitmap.toUint32Array();
      return treated.users;
    }
    entry.users ??= entry.bitmap.toUint32Array();
    return entry.users;
  }

  /** A move belongs to one instance, whose holdout never changes: the treated users are kept with the move. */
  private treated(entry: DecodedMove, holdout: HoldoutPlan): NonNullable<DecodedMove['treated']> {
    entry.treated ??= { bitmap: withoutHeldOut(entry.bitmap, holdout) };
    return entry.treated;
  }

  private async entry({ tenantId, seq }: MoveKey): Promise<DecodedMove> {
    const hit = this.entries.find((entry) => entry.seq === seq);
    if (hit) return hit;
    const row = await this.database.db.journal.findUnique({ where: { seq, tenantId }, select: { bitmap: true } });
    const entry: DecodedMove = { seq, bitmap: row?.bitmap ? deserializeBitmap(row.bitmap) : new RoaringBitmap32() };
    this.entries.unshift(entry);
    this.entries.length = Math.min(this.entries.length, 2);
    return entry;
  }

  /** Remembers the users a cap decision let through (its id), in the order deliveries cut them. */
  remember(id: string, users: Uint32Array): Uint32Array {
    this.delivered.unshift({ id, users });
    this.delivered.length = Math.min(this.delivered.length, 2);
    return users;
  }

  /**
   * The users of a bulk move still owed to `destination` when a round resumes inside it: less those held out, those
   * a cap skipped and those quiet hours held or dropped (the decisions of its first round, keyed as that round did).
   */
  async resumed(move: MoveKey, destination: DestinationKey, holdout: HoldoutPlan | null): Promise<Uint32Array> {
    const capped = await bulkDecision(this.database, destination, move.seq);
    const quiet = await quietDecision(this.database, destination, move.seq);
    if (!capped && !quiet) return this.users(move, holdout);
    const key = decisionKey(capped?.id, quiet?.ids ?? []);
    const hit = this.delivered.find((entry) => entry.id === key);
    if (hit) return hit.users;
    let users = await this.bitmap(move, holdout);
    if (capped) users = RoaringBitmap32.andNot(users, capped.capped);
    if (quiet) users = RoaringBitmap32.andNot(users, quiet.users);
    return this.remember(key, users.toUint32Array());
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
  usersPerRound = USERS_PER_ROUND,
): Promise<CutRound> {
  const rows: JournalHead[] = await database.db.journal.findMany({
    where: { tenantId: destination.tenantId, seq: { gt: destination.cursor } },
    orderBy: { seq: 'asc' },
    take: ROWS_PER_ROUND,
    select: {
      tenantId: true,
      seq: true,
      instanceId: true,
      fromStep: true,
      toStep: true,
      user: true,
      count: true,
      leaveAction: true,
      enterAction: true,
      timeMs: true,
    },
  });
  const round: CutRound = {
    deliveries: [],
    cursor: destination.cursor,
    cursorUsers: destination.cursorUsers,
    lostThrough: destination.lostThrough,
    readRows: rows.length,
    caps: await RoundCaps.load(database, destination),
    quiet: new RoundQuiet(database, destination, now, decoded.zones),
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
      tenantId: destination.tenantId,
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
  let budget = usersPerRound;
  for (const row of rows) {
    if (!movesTo(destination, row.enterAction)) {
      Object.assign(round, { cursor: row.seq, cursorUsers: 0 });
      continue;
    }
    if (budget === 0) break;
    // An action move of an instance with a holdout: its held-out users get nothing, and count against no cap.
    const holdout = isActionFor(destination, row.enterAction) ? await decoded.holdouts.of(destination.tenantId, row.instanceId) : null;
    let users: Uint32Array;
    if (row.user === null && round.cursorUsers > 0) {
      // Resuming inside a bulk move: its first round decided who a cap skips.
      users = await decoded.resumed(row, destination, holdout);
    } else if (row.user !== null && holdout && isHeldOut(holdout, Number(row.user))) {
      Object.assign(round, { cursor: row.seq, cursorUsers: 0 });
      continue;
    } else if (isActionFor(destination, row.enterAction)) {
      if (row.user !== null) {
        const user = Number(row.user);
        // Capped: skipped. Then quiet hours: held or dropped (a cap counted it, as it was due now).
        if ((round.caps && !(await round.caps.decideUser(row, user))) || (await round.quiet.holdUser(row, user))) {
          Object.assign(round, { cursor: row.seq, cursorUsers: 0 });
          continue;
        }
        users = Uint32Array.of(user);
      } else {
        users = await decideBulk(round, decoded, row, holdout);
      }
    } else {
      users = row.user === null ? await decoded.users(row, holdout) : Uint32Array.of(Number(row.user));
    }
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

/** The key a bulk move's delivered users are remembered under: its cap decision's id and its quiet rows' ids. */
function decisionKey(capped: string | undefined, quiet: string[]): string {
  return [...(capped ? [capped] : []), ...quiet].join(' ');
}

/** An action bulk move's users delivered to now: caps skip some (./capping.ts), then quiet hours hold or drop some. */
async function decideBulk(round: CutRound, decoded: DecodedMoves, row: JournalHead, holdout: HoldoutPlan | null): Promise<Uint32Array> {
  let users = await decoded.bitmap(row, holdout);
  let capped: string | undefined;
  if (round.caps) {
    const { delivered, decisionId } = await round.caps.decideBulk(row, users);
    users = delivered;
    capped = decisionId;
  }
  const { sendNow, ids } = await round.quiet.decideBulk(row, users);
  if (capped === undefined && ids.length === 0) return decoded.users(row, holdout);
  return decoded.remember(decisionKey(capped, ids), sendNow.toUint32Array());
}

/**
 * Commits a round: its deliveries, the new cursor and what its caps counted and skipped, only if the cursor is still
 * the one the round read and no window it counted into changed meanwhile.
 */
export function commitRound(database: Database, destination: DestinationRow, round: CutRound): Promise<boolean> {
  const { cursor, cursorUsers, lostThrough } = destination;
  const caps = round.caps?.rows() ?? { capWindows: [], capped: [] };
  return commitCutRound(
    database,
    destination,
    { cursor, cursorUsers, lostThrough },
    { cursor: round.cursor, cursorUsers: round.cursorUsers, lostThrough: round.lostThrough },
    { deliveries: round.deliveries, ...caps, quiet: round.quiet.rows() },
  );
}

/** Tells the receiver that moves with seq in (after, through] may never reach it: retention deleted them first. */
function lostDelivery(destination: DestinationRow, tenant: string, after: bigint, through: bigint, now: number): NewDelivery {
  const id = `${destination.id}-${through}-lost`;
  const head = `{"id":${JSON.stringify(id)},"type":"lost","tenant":${JSON.stringify(tenant)},"destination":${JSON.stringify(destination.name)}`;
  return {
    id,
    tenantId: destination.tenantId,
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

export function movePart(row: Omit<JournalHead, 'user' | 'count'>, total: number, offset: number, users: Uint32Array): MovePart {
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
export function deliveryBody(id: string, tenant: string, destination: string, parts: MovePart[], extra = ''): string {
  const moves = parts.map(({ users, ...move }) => `${JSON.stringify(move).slice(0, -1)},"users":[${users}]}`);
  return `{"id":${JSON.stringify(id)},"type":"moves","tenant":${JSON.stringify(tenant)},"destination":${JSON.stringify(destination)}${extra},"moves":[${moves.join(',')}]}`;
}
