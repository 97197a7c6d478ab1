// Frequency caps (issue 37 §2), where deliveries are cut: a seeded journal of bulk and single moves into steps with
// webhook actions, over three days and two destinations, under a cap on every destination (with an exempt journey
// and an exempt step) and a cap on one destination. The deliveries made and the skips recorded are compared with an
// expectation computed here independently: per-user counters in plain Maps, in the order the rounds cut the moves.
import { describe, expect, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { applyCaps, CapLevels } from '../../server/webhooks/cap-bitmaps';
import { cappedCounts, cappedStepUsers, compactCapped } from '../../server/webhooks/capping';
import { createCap, type CreateCapBody } from '../../server/webhooks/caps';
import { commitRound, cutRound, DecodedMoves } from '../../server/webhooks/cut';
import { createDestination, requireDestination } from '../../server/webhooks/destinations';
import { seededRandom } from '../helpers/seeded-random';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 5, 1, 6);

type Move = { seq: number; instanceId: string; journey: string; step: string; users: number[]; bulk: boolean; enterAction: string | null; timeMs: number };
type Cap = {
  name: string;
  max: number;
  windowMs: number;
  destination: string | null;
  exemptJourneys: string[];
  exemptSteps: { journey: string; step: string }[];
};

async function tenantWithJourneys(): Promise<{ tenantId: string; instances: Record<string, string> }> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 2 } });
  const instances: Record<string, string> = {};
  for (const journey of ['welcome', 'receipts']) {
    const workflowId = newId('wf');
    await db().workflow.create({ data: { id: workflowId, tenantId, name: journey, currentVersion: 1, draft: '{}' } });
    instances[journey] = newId('in');
    await db().instance.create({
      data: { id: instances[journey], tenantId, workflowId, version: 1, crowdName: 'c', state: 'running', userCount: 200n },
    });
  }
  return { tenantId, instances };
}

async function destination(tenantId: string, name: string, batchSize: number) {
  await createDestination(
    database(),
    tenantId,
    { name, url: 'https://receiver.example/hook', headers: {}, batchSize, timeoutMs: 5_000, allNotifications: false, start: 'head' },
    T0,
  );
  return requireDestination(database(), tenantId, name);
}

/** A seeded journal: bulk moves (subsets of 200 users) and single moves, with one, two or no webhook tags. */
async function seedJournal(tenantId: string, instances: Record<string, string>, seed: number): Promise<Move[]> {
  const random = seededRandom(seed);
  const newest = await db().journal.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
  let seq = Number(newest?.seq ?? 0n);
  const moves: Move[] = [];
  const tags = ['webhook:crm', 'webhook:sms', 'webhook:crm,webhook:sms', null, 'email-sent'];
  for (let i = 0; i < 160; i++) {
    const journey = random() < 0.8 ? 'welcome' : 'receipts';
    const step = ['notify', 'otp', 'promo'][Math.floor(random() * 3)];
    const bulk = random() < 0.3;
    const users = bulk
      ? [...new Set(Array.from({ length: 20 + Math.floor(random() * 120) }, () => Math.floor(random() * 200)))].sort((a, b) => a - b)
      : [Math.floor(random() * 200)];
    const timeMs = T0 + Math.floor((i / 160) * 3 * DAY);
    moves.push({ seq: ++seq, instanceId: instances[journey], journey, step, users, bulk, enterAction: tags[Math.floor(random() * tags.length)], timeMs });
  }
  await db().journal.createMany({
    data: moves.map((m) => ({
      seq: BigInt(m.seq),
      tenantId,
      instanceId: m.instanceId,
      partition: 0,
      fromStep: 'entry',
      toStep: m.step,
      user: m.bulk ? null : BigInt(m.users[0]),
      bitmap: m.bulk ? serializeBitmap(new RoaringBitmap32(m.users)) : null,
      count: BigInt(m.users.length),
      leaveAction: null,
      enterAction: m.enterAction,
      timeMs: BigInt(m.timeMs),
    })),
  });
  return moves;
}

/** The expectation, by plain counting: destinations cut one after the other, each in journal order. */
function expected(moves: Move[], caps: Cap[], order: string[]) {
  const counters = new Map<string, number>();
  const delivered = new Map<string, string[]>();
  const skipped = new Map<string, { users: Set<number>; skipped: number }>();
  for (const dest of order) {
    const made: string[] = [];
    for (const move of moves) {
      if (!(move.enterAction ?? '').split(',').includes(`webhook:${dest}`)) continue;
      const applying = caps.filter(
        (cap) =>
          (cap.destination === null || cap.destination === dest) &&
          !cap.exemptJourneys.includes(move.journey) &&
          !cap.exemptSteps.some((s) => s.journey === move.journey && s.step === move.step),
      );
      for (const user of move.users) {
        const keys = applying.map((cap) => `${cap.name}/${Math.floor(move.timeMs / cap.windowMs)}/${user}`);
        if (applying.some((cap, i) => (counters.get(keys[i]) ?? 0) >= cap.max)) {
          const key = `${move.instanceId}/${move.step}`;
          const entry = skipped.get(key) ?? { users: new Set<number>(), skipped: 0 };
          entry.users.add(user);
          entry.skipped++;
          skipped.set(key, entry);
          continue;
        }
        for (const key of keys) counters.set(key, (counters.get(key) ?? 0) + 1);
        made.push(`${move.seq}:${user}`);
      }
    }
    delivered.set(dest, made.sort());
  }
  return { delivered, skipped };
}

async function cutAll(tenantId: string, name: string, usersPerRound: number): Promise<number> {
  const decoded = new DecodedMoves(database());
  let rounds = 0;
  for (;;) {
    const row = await requireDestination(database(), tenantId, name);
    const round = await cutRound(database(), row, 'tenant', T0, decoded, usersPerRound);
    if (round.readRows === 0 && round.deliveries.length === 0) return rounds;
    expect(await commitRound(database(), row, round)).toBe(true);
    rounds++;
  }
}

async function deliveredPairs(destinationId: string): Promise<string[]> {
  const rows = await db().webhookDelivery.findMany({ where: { destinationId } });
  const pairs: string[] = [];
  for (const row of rows)
    for (const move of JSON.parse(row.body).moves as { seq: number; users: number[] }[]) for (const user of move.users) pairs.push(`${move.seq}:${user}`);
  return pairs.sort();
}

describe('frequency caps', () => {
  it('counts deliveries as bitmap levels: the last level is the users at the cap', () => {
    const window = CapLevels.empty(2);
    const first = applyCaps(new RoaringBitmap32([1, 2, 3]), [window]);
    expect(first.capped.toArray()).toEqual([]);
    const second = applyCaps(new RoaringBitmap32([2, 3, 4]), [window]);
    expect(second.delivered.toArray()).toEqual([2, 3, 4]);
    const third = applyCaps(new RoaringBitmap32([1, 2, 3, 4, 5]), [window]);
    expect(third.capped.toArray()).toEqual([2, 3]);
    expect(third.delivered.toArray()).toEqual([1, 4, 5]);
    const back = CapLevels.decode(window.encode());
    expect(back.levels.map((l) => l.toArray())).toEqual([
      [1, 2, 3, 4, 5],
      [1, 2, 3, 4],
    ]);
    expect(back.resized(3).levels.map((l) => l.size)).toEqual([5, 4, 0]);
  });

  for (const seed of [1, 2, 3])
    it(`skips exactly the deliveries past each cap, counted per step, over a seeded journal (seed ${seed})`, async () => {
      const { tenantId, instances } = await tenantWithJourneys();
      const crm = await destination(tenantId, 'crm', 37);
      const sms = await destination(tenantId, 'sms', 1_000);
      const caps: Cap[] = [
        { name: 'daily', max: 2, windowMs: DAY, destination: null, exemptJourneys: ['receipts'], exemptSteps: [{ journey: 'welcome', step: 'otp' }] },
        { name: 'sms-half-day', max: 1, windowMs: DAY / 2, destination: 'sms', exemptJourneys: [], exemptSteps: [] },
      ];
      for (const cap of caps) {
        const body: CreateCapBody = {
          name: cap.name,
          maxDeliveries: cap.max,
          window: cap.windowMs === DAY ? '1d' : '12h',
          destination: cap.destination,
          exempt: { journeys: cap.exemptJourneys, steps: cap.exemptSteps },
        };
        await createCap(database(), tenantId, body, T0);
      }
      const moves = await seedJournal(tenantId, instances, seed);
      // Rounds of at most 50 users: bulk moves are cut over several rounds, resuming from their first round's decision.
      expect(await cutAll(tenantId, 'crm', 50)).toBeGreaterThan(10);
      await cutAll(tenantId, 'sms', 50);

      const expectation = expected(moves, caps, ['crm', 'sms']);
      expect(await deliveredPairs(crm.id)).toEqual(expectation.delivered.get('crm'));
      expect(await deliveredPairs(sms.id)).toEqual(expectation.delivered.get('sms'));
      const skips = [...expectation.skipped.values()].reduce((sum, e) => sum + e.skipped, 0);
      expect(skips).toBeGreaterThan(20);

      const checkCounts = async () => {
        for (const [journey, instanceId] of Object.entries(instances)) {
          const counts = await cappedCounts(database(), tenantId, instanceId);
          const want: Record<string, { users: number; skipped: number }> = {};
          for (const [key, entry] of expectation.skipped)
            if (key.startsWith(`${instanceId}/`)) want[key.slice(instanceId.length + 1)] = { users: entry.users.size, skipped: entry.skipped };
          expect(counts, journey).toEqual(want);
          for (const step of Object.keys(want))
            expect((await cappedStepUsers(database(), tenantId, instanceId, step)).toArray()).toEqual(
              [...(expectation.skipped.get(`${instanceId}/${step}`)?.users ?? [])].sort((a, b) => a - b),
            );
        }
      };
      await checkCounts();
      // The sweep's compaction leaves one row per destination, instance and step, and the same counts and exports.
      const before = await db().cappedDelivery.count({ where: { tenantId } });
      expect(await compactCapped(database())).toBeGreaterThan(0);
      const groups = await db().cappedDelivery.groupBy({ by: ['destinationId', 'instanceId', 'step'], where: { tenantId }, _count: { id: true } });
      expect(groups.every((g) => g._count.id === 1)).toBe(true);
      expect(groups.length).toBeLessThan(before);
      await checkCounts();
      // The journey exempt from the cap on every destination is capped only by the sms cap.
      const receipts = await db().cappedDelivery.findMany({ where: { instanceId: instances.receipts }, select: { destinationId: true } });
      expect(new Set(receipts.map((r) => r.destinationId))).not.toContain(crm.id);
    });

  it('a round that counted into a window another round changed first is refused, and cut again from what committed', async () => {
    const { tenantId, instances } = await tenantWithJourneys();
    const crm = await destination(tenantId, 'crm', 100);
    const sms = await destination(tenantId, 'sms', 100);
    await createCap(database(), tenantId, { name: 'one', maxDeliveries: 1, window: '1d', destination: null, exempt: { journeys: [], steps: [] } }, T0);
    const newest = await db().journal.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
    const seq = (newest?.seq ?? 0n) + 1n;
    await db().journal.create({
      data: {
        seq,
        tenantId,
        instanceId: instances.welcome,
        partition: 0,
        fromStep: 'entry',
        toStep: 'notify',
        user: null,
        bitmap: serializeBitmap(new RoaringBitmap32([1, 2, 3])),
        count: 3n,
        leaveAction: null,
        enterAction: 'webhook:crm,webhook:sms',
        timeMs: BigInt(T0),
      },
    });
    const crmRound = await cutRound(database(), crm, 'tenant', T0);
    const smsRound = await cutRound(database(), sms, 'tenant', T0);
    expect(crmRound.deliveries.map((d) => d.users)).toEqual([3]);
    expect(smsRound.deliveries.map((d) => d.users)).toEqual([3]);
    expect(await commitRound(database(), crm, crmRound)).toBe(true);
    expect(await commitRound(database(), sms, smsRound)).toBe(false);
    const again = await cutRound(database(), await requireDestination(database(), tenantId, 'sms'), 'tenant', T0);
    expect(again.deliveries).toEqual([]);
    expect(await commitRound(database(), sms, again)).toBe(true);
    expect(await cappedCounts(database(), tenantId, instances.welcome)).toEqual({ notify: { users: 3, skipped: 3 } });
    expect(await db().webhookDelivery.count({ where: { destinationId: sms.id } })).toBe(0);
  });
});
