// Quiet hours (issue 37 §3) where the webhook pump cuts deliveries, on both providers, with a ManualClock: a move's
// users are grouped by the zone in their profiles; those inside the window are held (one row per zone) and sent when
// the clock reaches the window's opening in their zone, once, also by a pump built anew (a restarted process); a
// rule in drop mode sends them nothing; a journey without quiet hours (false) sends at once.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { newId } from '../../server/ids';
import { updateTenantLimits } from '../../server/limits/limits';
import type { QuietHoursRule } from '../../core/model/workflow';
import { createProcedureRunner } from '../../server/procedures/runner';
import { db, database } from '../helpers/app-db';
import { commitRound, cutRound, DecodedMoves } from '../../server/webhooks/cut';
import { DELIVER_TYPE } from '../../server/webhooks/deliveries';
import { createDestination, requireDestination } from '../../server/webhooks/destinations';
import { WebhookPump } from '../../server/webhooks/pump';
import { quietCounts, quietStepUsers } from '../../server/webhooks/quiet-holding';
import { releaseDueQuiet } from '../../server/webhooks/quiet-release';
import { putQuietHours } from '../../server/webhooks/quiet-rules';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { waitFor } from '../helpers/wait-for';

const SECRET = 'whsec_test-secret-0123456789';
const NIGHT: QuietHoursRule = { start: '21:00', end: '08:00', mode: 'hold', zoneAttribute: 'timezone', defaultZone: 'UTC' };
/** 21:30 UTC: 23:30 in Amsterdam and 06:30 in Tokyo (inside the window), 17:30 in New York (outside). */
const T0 = Date.parse('2026-06-01T21:30:00Z');
/** Users 1–2 in Amsterdam, 3–4 in New York, 5 without a zone (the default, UTC), 6 in Tokyo. */
const ZONES: Record<number, string | undefined> = {
  1: 'Europe/Amsterdam',
  2: 'Europe/Amsterdam',
  3: 'America/New_York',
  4: 'America/New_York',
  6: 'Asia/Tokyo',
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A tenant with profiles, a receiver's destination, and a running instance of a journey (its own quietHours if given). */
async function scene(clock: ManualClock, quietHours?: QuietHoursRule | false) {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 2 } });
  await updateTenantLimits(database(), tenantId, { webhookPrivateAddresses: true });
  await db().profile.createMany({
    data: [1, 2, 3, 4, 5, 6].map((user) => ({
      tenantId,
      user: BigInt(user),
      attributes: JSON.stringify(ZONES[user] ? { timezone: ZONES[user] } : { plan: 'pro' }),
    })),
  });
  const receiver = await startReceiver({ secret: SECRET, now: () => clock.now(), seed: 1 });
  cleanups.push(() => receiver.close());
  await createDestination(
    database(),
    tenantId,
    { name: 'crm', url: receiver.url, secret: SECRET, headers: {}, batchSize: 100, timeoutMs: 5_000, allNotifications: false, start: 'head' },
    clock.now(),
  );
  const workflowId = newId('wf');
  const definition = { steps: [{ name: 'notify', kind: 'direct', enterAction: 'webhook:crm' }], ...(quietHours === undefined ? {} : { quietHours }) };
  await db().workflow.create({ data: { id: workflowId, tenantId, name: 'welcome', currentVersion: 1, draft: '{}' } });
  await db().workflowVersion.create({ data: { tenantId, workflowId, version: 1, definition: JSON.stringify(definition) } });
  const instanceId = newId('in');
  await db().instance.create({ data: { id: instanceId, tenantId, workflowId, version: 1, crowdName: 'c', state: 'running', userCount: 6n } });
  // The clock jumps hours to each window's opening: a runner polling every second would wake thousands of times on
  // the way (a submit wakes it at once anyway).
  const runner = createProcedureRunner(database(), { clock, owner: `quiet-test-${newId('o')}`, pollMs: 3_600_000 });
  void runner.start();
  cleanups.push(() => runner.stop());
  return { tenantId, instanceId, receiver, runner };
}

/** Journal rows as the engine writes them: a bulk move of `users`, or one user's move. */
async function journal(tenantId: string, instanceId: string, time: number, moves: ({ users: number[] } | { user: number })[]): Promise<void> {
  const newest = await db().journal.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
  let seq = newest?.seq ?? 0n;
  await db().journal.createMany({
    data: moves.map((move) => ({
      seq: ++seq,
      tenantId,
      instanceId,
      partition: 0,
      fromStep: 'entry',
      toStep: 'notify',
      user: 'user' in move ? BigInt(move.user) : null,
      bitmap: 'users' in move ? serializeBitmap(new RoaringBitmap32(move.users)) : null,
      count: BigInt('users' in move ? move.users.length : 1),
      leaveAction: null,
      enterAction: 'webhook:crm',
      timeMs: BigInt(time),
    })),
  });
}

/** Waits until every delivery is sent: attempts run on the runner's own turns, over real HTTP to the receiver. */
async function settle(clock: ManualClock): Promise<void> {
  await waitFor(
    'every delivery attempt to finish',
    async () => ({
      due: await db().procedure.count({ where: { type: DELIVER_TYPE, state: { notIn: ['done', 'failed'] }, nextRunMs: { lte: BigInt(clock.now()) } } }),
      pending: await db().webhookDelivery.count({ where: { status: 'pending' } }),
    }),
    ({ due, pending }) => due === 0 && pending === 0,
    { everyMs: 10 },
  );
}

/** Each delivered (user, zone held in) pair, from the receiver's bodies: `3` sent at once, `1@Europe/Amsterdam` held. */
function received(receiver: Receiver): string[] {
  const pairs: string[] = [];
  for (const body of receiver.delivered.values()) {
    const parsed = JSON.parse(body) as { quietHours?: { zone: string }; moves: { users: number[] }[] };
    for (const move of parsed.moves) for (const user of move.users) pairs.push(parsed.quietHours ? `${user}@${parsed.quietHours.zone}` : String(user));
  }
  return pairs.sort();
}

describe('quiet hours', () => {
  it('hold a delivery inside the window and send it when the window opens in the user’s zone, once, across a restart', async () => {
    const clock = new ManualClock(T0);
    const { tenantId, instanceId, receiver, runner } = await scene(clock);
    await putQuietHours(database(), tenantId, NIGHT, clock.now());
    await journal(tenantId, instanceId, T0, [{ users: [1, 2, 3, 4, 5, 6] }, { user: 2 }, { user: 3 }]);
    const pump = new WebhookPump({ database: database(), runner, clock });
    await pump.pumpOnce();
    await settle(clock);
    // New York's users went at once; the others wait, one row per zone of the bulk move, one for the single move.
    expect(received(receiver)).toEqual(['3', '3', '4']);
    expect(await quietCounts(database(), tenantId, instanceId)).toEqual({ notify: { waiting: 4, dropped: 0 } });
    expect((await quietStepUsers(database(), tenantId, instanceId, 'notify')).toArray()).toEqual([1, 2, 5, 6]);
    const rows = await db().quietDelivery.findMany({ where: { tenantId }, orderBy: { releaseAt: 'asc' } });
    expect(rows.map((r) => [r.zone, r.bulk, new Date(Number(r.releaseAt)).toISOString()])).toEqual([
      ['Asia/Tokyo', true, '2026-06-01T23:00:00.000Z'],
      ['Europe/Amsterdam', true, '2026-06-02T06:00:00.000Z'],
      ['Europe/Amsterdam', false, '2026-06-02T06:00:00.000Z'],
      ['UTC', true, '2026-06-02T08:00:00.000Z'],
    ]);

    // A minute before 08:00 in Tokyo nothing is sent; at 08:00 there (23:00 UTC) Tokyo's user is.
    await clock.set(Date.parse('2026-06-01T22:59:00Z'));
    expect(await pump.pumpOnce()).toBe(0);
    await clock.set(Date.parse('2026-06-01T23:00:00Z'));
    expect(await pump.pumpOnce()).toBe(1);
    await settle(clock);
    expect(received(receiver)).toEqual(['3', '3', '4', '6@Asia/Tokyo']);
    expect(await quietCounts(database(), tenantId, instanceId)).toEqual({ notify: { waiting: 3, dropped: 0 } });

    // A pump built anew (a restarted process) sends what waits for Amsterdam when it is 08:00 there, and nothing twice.
    await clock.set(Date.parse('2026-06-02T06:00:00Z'));
    const restarted = new WebhookPump({ database: database(), runner, clock });
    expect(await restarted.pumpOnce()).toBe(2);
    expect(await restarted.pumpOnce()).toBe(0);
    expect(await pump.pumpOnce()).toBe(0);
    await settle(clock);
    expect(received(receiver)).toEqual(['1@Europe/Amsterdam', '2@Europe/Amsterdam', '2@Europe/Amsterdam', '3', '3', '4', '6@Asia/Tokyo']);
    await clock.set(Date.parse('2026-06-02T08:00:00Z'));
    expect(await restarted.pumpOnce()).toBe(1);
    await settle(clock);
    expect(received(receiver)).toContain('5@UTC');
    // Nobody waits any more: the counts have no `quiet` for the step.
    expect(await quietCounts(database(), tenantId, instanceId)).toEqual({});
    // Each delivery has its own id, and the held ones say which move they belong to.
    const deliveries = await db().webhookDelivery.findMany({ where: { destination: { tenantId } } });
    // At once: one delivery (the bulk move's and the single move's New York users); then Tokyo, Amsterdam (bulk and single), UTC.
    expect(deliveries).toHaveLength(5);
    const tokyo = JSON.parse(deliveries.find((d) => /-q\d+$/.test(d.id) && d.body.includes('Asia/Tokyo'))!.body);
    expect(tokyo).toMatchObject({ type: 'moves', quietHours: { zone: 'Asia/Tokyo', heldUntil: '2026-06-01T23:00:00.000Z' } });
    expect(tokyo.moves[0]).toMatchObject({ to: 'notify', enterAction: 'webhook:crm', time: '2026-06-01T21:30:00.000Z', users: [6] });
  });

  it('drop mode sends nothing to users inside the window and counts what it dropped (rows merged by the sweep); a journey with quietHours false sends at once', async () => {
    const clock = new ManualClock(T0);
    const dropping = await scene(clock, { ...NIGHT, mode: 'drop' });
    await journal(dropping.tenantId, dropping.instanceId, T0, [{ users: [1, 2, 3, 4, 5, 6] }, { user: 1 }]);
    const pump = new WebhookPump({ database: database(), runner: dropping.runner, clock });
    await pump.pumpOnce();
    await settle(clock);
    expect(received(dropping.receiver)).toEqual(['3', '4']);
    expect(await quietCounts(database(), dropping.tenantId, dropping.instanceId)).toEqual({ notify: { waiting: 0, dropped: 5 } });
    await clock.set(Date.parse('2026-06-02T09:00:00Z'));
    expect(await db().quietDelivery.count({ where: { tenantId: dropping.tenantId } })).toBe(4);
    expect(await pump.pumpOnce()).toBe(0);
    // The pump's sweep merged Amsterdam's two dropped rows (the bulk move's and user 1's own move): the same figures.
    expect(await db().quietDelivery.count({ where: { tenantId: dropping.tenantId } })).toBe(3);
    expect(await quietCounts(database(), dropping.tenantId, dropping.instanceId)).toEqual({ notify: { waiting: 0, dropped: 5 } });

    // The tenant's rule holds, but this journey opts out.
    const transactional = await scene(clock, false);
    await putQuietHours(database(), transactional.tenantId, NIGHT, clock.now());
    await clock.set(T0 + 86_400_000);
    await journal(transactional.tenantId, transactional.instanceId, clock.now(), [{ users: [1, 2, 5, 6] }]);
    await pump.pumpOnce();
    await settle(clock);
    expect(received(transactional.receiver)).toEqual(['1', '2', '5', '6']);
    expect(await quietCounts(database(), transactional.tenantId, transactional.instanceId)).toEqual({});
  });

  it('a bulk move cut over several rounds leaves the held users out of every round', async () => {
    const clock = new ManualClock(T0);
    const { tenantId, instanceId } = await scene(clock);
    await putQuietHours(database(), tenantId, NIGHT, clock.now());
    await journal(tenantId, instanceId, T0, [{ users: [1, 2, 3, 4, 5, 6] }]);
    const decoded = new DecodedMoves(database());
    for (let rounds = 0; ; rounds++) {
      expect(rounds).toBeLessThan(10);
      const destination = await requireDestination(database(), tenantId, 'crm');
      // A fresh cache each time in the middle: the later rounds read the first round's decision back.
      const round = await cutRound(database(), destination, 'tenant', clock.now(), rounds === 1 ? new DecodedMoves(database()) : decoded, 1);
      if (round.readRows === 0 && round.deliveries.length === 0) break;
      expect(await commitRound(database(), destination, round)).toBe(true);
    }
    const deliveries = await db().webhookDelivery.findMany({ where: { destination: { tenantId } } });
    expect(deliveries.flatMap((d) => (JSON.parse(d.body).moves as { users: number[] }[]).flatMap((m) => m.users)).sort()).toEqual([3, 4]);
    expect(await db().quietDelivery.count({ where: { tenantId } })).toBe(3);
  });

  it('a held group larger than a part is sent over several rounds, each user once, the waiting users shrinking', async () => {
    const clock = new ManualClock(T0);
    const { tenantId, instanceId, runner } = await scene(clock);
    await putQuietHours(database(), tenantId, NIGHT, clock.now());
    // 1,000 users without a profile: the default zone, UTC, is inside the window at 21:30.
    const everyone = Array.from({ length: 1000 }, (_, i) => 100 + i);
    await journal(tenantId, instanceId, T0, [{ users: everyone }]);
    await new WebhookPump({ database: database(), runner, clock }).pumpOnce();
    expect(await quietCounts(database(), tenantId, instanceId)).toEqual({ notify: { waiting: 1000, dropped: 0 } });
    await clock.set(Date.parse('2026-06-02T08:00:00Z'));
    // Parts of at most 250 users, in whole deliveries of 100 (the destination's batch): 200 a part.
    const waiting: number[] = [];
    // (Rows of the other tests' tenants in this file's database are due too.)
    const release = async () => (await releaseDueQuiet(database(), clock.now(), 250)).filter((r) => r.tenantId === tenantId).flatMap((r) => r.ids);
    for (let part = 0; part < 5; part++) {
      expect(await release()).toHaveLength(2);
      waiting.push((await quietStepUsers(database(), tenantId, instanceId, 'notify')).size);
    }
    expect(waiting).toEqual([800, 600, 400, 200, 0]);
    expect(await release()).toEqual([]);
    const deliveries = await db().webhookDelivery.findMany({ where: { destination: { tenantId } }, orderBy: { fromOffset: 'desc' } });
    expect(deliveries.map((d) => d.id.replace(/^.*-q/, 'q'))).toEqual(['q0', 'q100', 'q200', 'q300', 'q400', 'q500', 'q600', 'q700', 'q800', 'q900']);
    const sent = deliveries.flatMap((d) => (JSON.parse(d.body).moves as { users: number[]; offset: number; total: number }[]).flatMap((m) => m.users));
    expect(sent.sort((a, b) => a - b)).toEqual(everyone);
    expect(await db().quietDelivery.findMany({ where: { tenantId }, select: { status: true, releasedUsers: true } })).toEqual([
      { status: 'sent', releasedUsers: 1000 },
    ]);
  });
});
