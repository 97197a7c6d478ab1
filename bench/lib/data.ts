// Deterministic benchmark inputs: crowds of user IDs, their upload bytes, and event streams (drawn with the tests'
// seeded generator, so every run measures the same inputs).
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { seededRandom } from '../../test/helpers/seeded-random';

/** `count` distinct IDs drawn from [0, 4 × count) (Knuth's selection sampling), in shuffled order, like a CRM export. */
export function sparseIds(count: number, seed = 1): Uint32Array {
  const next = seededRandom(seed);
  const space = count * 4;
  const ids = new Uint32Array(count);
  let chosen = 0;
  for (let candidate = 0; candidate < space && chosen < count; candidate++) {
    if ((space - candidate) * next() < count - chosen) ids[chosen++] = candidate;
  }
  for (let i = count - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    const swap = ids[i];
    ids[i] = ids[j];
    ids[j] = swap;
  }
  return ids;
}

/** Users 0 … count-1: the dense crowd of the memory and journey scenarios. */
export function denseBitmap(count: number): RoaringBitmap32 {
  const bitmap = new RoaringBitmap32();
  bitmap.addRange(0, count);
  return bitmap;
}

/** One ID per line, written as bytes (no joined string). */
export function idsAsText(ids: Uint32Array): Buffer {
  const out = Buffer.allocUnsafe(ids.length * 11);
  let position = 0;
  for (let k = 0; k < ids.length; k++) {
    position += out.write(String(ids[k]), position, 'latin1');
    out[position++] = 10;
  }
  return out.subarray(0, position);
}

/** Splits bytes into chunks the size an HTTP body arrives in, as the upload parsers receive them. */
export async function* chunked(bytes: Uint8Array, size = 64 * 1024): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, Math.min(bytes.length, offset + size));
}

export interface BenchEvent {
  user: number;
  type: 'purchase' | 'view';
  data: { amount: number };
}

/**
 * Events of the branch journey: a random user of [0, users) each, 10% purchases (half of them over 100).
 * The branch step `wait` moves a user on their first purchase: amount > 100 → `big`, else `small`.
 */
export function journeyEvents(count: number, users: number, seed = 7): BenchEvent[] {
  const next = seededRandom(seed);
  const events = new Array<BenchEvent>(count);
  for (let i = 0; i < count; i++) {
    const user = Math.floor(next() * users);
    const purchase = next() < 0.1;
    events[i] = { user, type: purchase ? 'purchase' : 'view', data: { amount: Math.floor(next() * 200) + 1 } };
  }
  return events;
}

/** How many users the events move to `big` and `small` (each user moves once, on their first purchase). */
export function expectedMoves(events: BenchEvent[], users: number): { big: number; small: number } {
  const moved = new Uint8Array(users);
  let big = 0;
  let small = 0;
  for (const event of events) {
    if (event.type !== 'purchase' || moved[event.user]) continue;
    moved[event.user] = 1;
    if (event.data.amount > 100) big++;
    else small++;
  }
  return { big, small };
}

/** The branch journey's condition, as CEL for the engine and as plain JS for the limit. */
export const BIG_PURCHASE_CEL = 'event.type == "purchase" && event.data.amount > 100';
export const ANY_PURCHASE_CEL = 'event.type == "purchase"';

export const BRANCH_JOURNEY = {
  steps: [
    {
      name: 'wait',
      kind: 'branch',
      branches: [
        { condition: BIG_PURCHASE_CEL, next: 'big' },
        { condition: ANY_PURCHASE_CEL, next: 'small' },
      ],
    },
    { name: 'big', kind: 'direct' },
    { name: 'small', kind: 'direct' },
  ],
};

/** A journey whose entry step is a timer firing once, at `fireAt` (second precision, UTC, 6-field cron). */
export function timerJourney(fireAt: Date): object {
  const cron = `${fireAt.getUTCSeconds()} ${fireAt.getUTCMinutes()} ${fireAt.getUTCHours()} ${fireAt.getUTCDate()} ${fireAt.getUTCMonth() + 1} *`;
  return {
    steps: [
      { name: 'hold', kind: 'timer', cron, next: 'done' },
      { name: 'done', kind: 'direct' },
    ],
  };
}
