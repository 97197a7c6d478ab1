// Sending what quiet hours held (issue 37 §3) when the window opens in the held users' zone: the pump asks every
// round for the held rows whose `releaseAt` has come on its clock and cuts each into deliveries of at most batchSize
// ids, like a journal move. A part of a row (at most USERS_PER_RELEASE users: a row holding a 10M-user move is sent
// over many rounds, as the cut sends such a move) is one state change, one transaction: its deliveries created and
// the row's `releasedUsers` moved on (its status set from `held` to `sent` with the last part), only if the row is
// still where this part found it. The ids are fixed by the row (`<destination>-<seq>-q<offset>`, the offset counted
// over the held users of its move), so a second process releasing the same part fails on its guard, and the delivery
// procedures submitted after the commit are the pump's usual ones (an orphan is found by its sweep).
import { deserializeBitmap } from '../crowd/bitmap';
import type { Database } from '../storage/database';
import { releaseQuietPart } from '../storage/webhook-rows';
import { deliveryBody, LOST_OFFSET, movePart, type NewDelivery } from './cut';

/** Held rows released per pump round (a part of each, its own transaction); the rest wait for the next round. */
const ROWS_PER_ROUND = 50;
/** At most this many users of a row per part (≈ 2 MB of bodies), rounded down to whole deliveries. */
const USERS_PER_RELEASE = 200_000;

/** The delivery ids a held row's users go under, one per `batchSize` of them. */
export function releasedDeliveryId(destinationId: string, seq: bigint, offset: number): string {
  return `${destinationId}-${seq}-q${offset}`;
}

/**
 * Released deliveries sort among their move's own ones by the offset of their first user, below the `lost` report's
 * offset, so no two deliveries of a destination share (fromSeq, fromOffset).
 */
const releasedOffset = (offset: number) => LOST_OFFSET - 1 - offset;

/** Sends a part of each held row that is due at `now`; returns the deliveries committed, by tenant, to submit. */
export async function releaseDueQuiet(database: Database, now: number, usersPerRelease = USERS_PER_RELEASE): Promise<{ tenantId: string; ids: string[] }[]> {
  const due = await database.db.quietDelivery.findMany({
    where: { status: 'held', releaseAt: { lte: BigInt(now) } },
    orderBy: { releaseAt: 'asc' },
    take: ROWS_PER_ROUND,
  });
  const released: { tenantId: string; ids: string[] }[] = [];
  for (const row of due) {
    const destination = await database.db.webhookDestination.findUnique({
      where: { id: row.destinationId, tenantId: row.tenantId },
      include: { tenant: { select: { name: true } } },
    });
    const bitmap = deserializeBitmap(row.users);
    // Whole deliveries per part, so the next part's first delivery starts where this part's last one ended.
    const batch = destination?.batchSize ?? 1;
    const take = Math.min(Math.max(batch, Math.floor(usersPerRelease / batch) * batch), bitmap.size - row.releasedUsers);
    const users = bitmap.rangeUint32Array(new Uint32Array(Math.max(take, 0)), row.releasedUsers, take);
    const deliveries: NewDelivery[] = [];
    for (let offset = 0; destination && offset < users.length; offset += destination.batchSize) {
      const at = row.offsetBase + row.releasedUsers + offset;
      const id = releasedDeliveryId(destination.id, row.seq, at);
      const part = movePart({ ...row, toStep: row.step }, bitmap.size, row.releasedUsers + offset, users.subarray(offset, offset + destination.batchSize));
      const extra = `,"quietHours":{"zone":${JSON.stringify(row.zone)},"heldUntil":${JSON.stringify(new Date(Number(row.releaseAt)).toISOString())}}`;
      deliveries.push({
        id,
        tenantId: row.tenantId,
        destinationId: destination.id,
        fromSeq: row.seq,
        fromOffset: releasedOffset(at),
        status: 'pending',
        body: deliveryBody(id, destination.tenant.name, destination.name, [part], extra),
        users: part.count,
        createdAt: new Date(now),
      });
    }
    // A row whose destination is gone has nobody left to send to.
    const releasedUsers = destination ? row.releasedUsers + users.length : bitmap.size;
    if ((await releaseQuietPart(database, row, releasedUsers, releasedUsers >= bitmap.size, deliveries)) && deliveries.length)
      released.push({ tenantId: row.tenantId, ids: deliveries.map((d) => d.id) });
  }
  return released;
}
