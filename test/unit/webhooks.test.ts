import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { newId } from '../../server/ids';
import { updateTenantLimits } from '../../server/limits/limits';
import { applyJournalRetention } from '../../server/engine/journal-retention';
import { createProcedureRunner } from '../../server/procedures/runner';
import type { ProcedureRunner } from '../../server/procedures/types';
import { db, database } from '../helpers/app-db';
import { commitRound, cutRound } from '../../server/webhooks/cut';
import { DELIVER_TYPE, listDeliveries, MAX_RETRIES, replayDelivery, submitOrphans } from '../../server/webhooks/deliveries';
import { createDestination, destinationView, requireDestination, type CreateDestinationBody } from '../../server/webhooks/destinations';
import { DELIVERY_RETENTION_MS, WebhookPump } from '../../server/webhooks/pump';
import { signatureHeader, verifySignature } from '../../server/webhooks/signing';
import { workflowWarnings } from '../../server/workflows/warnings';
import { startReceiver, type Receiver } from '../fixtures/webhooks/receiver';
import { waitFor } from '../helpers/wait-for';

const SECRET = 'whsec_test-secret-0123456789';
let nextSeq = 1;
let clock: ManualClock;
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A tenant allowed private addresses: the receivers listen on 127.0.0.1. */
async function tenant(): Promise<{ id: string; name: string }> {
  const id = newId('tn');
  const name = id.toLowerCase().replace(/[^a-z0-9]/g, 'x');
  await db().tenant.create({ data: { id, name, partitions: 2 } });
  await updateTenantLimits(database(), id, { webhookPrivateAddresses: true });
  return { id, name };
}

const ADMIN = { admin: true };
const KEY = { admin: false };

/** A journal row as the engine writes it: one user, or a bulk move as a portable roaring bitmap. */
async function move(tenantId: string, what: { user?: number; users?: Iterable<number>; enterAction?: string | null; to?: string }): Promise<number> {
  const seq = nextSeq++;
  const bitmap = what.users ? new RoaringBitmap32(what.users) : null;
  await db().journal.create({
    data: {
      seq: BigInt(seq),
      tenantId,
      instanceId: 'in_1',
      partition: 0,
      fromStep: 'entry',
      toStep: what.to ?? 'notify',
      user: what.user === undefined ? null : BigInt(what.user),
      bitmap: bitmap ? serializeBitmap(bitmap) : null,
      count: BigInt(bitmap ? bitmap.size : 1),
      leaveAction: null,
      enterAction: what.enterAction === undefined ? 'webhook:crm' : what.enterAction,
      timeMs: BigInt(clock.now()),
    },
  });
  return seq;
}

function destinationBody(receiver: Receiver, extra: Partial<CreateDestinationBody> = {}): CreateDestinationBody {
  return {
    name: 'crm',
    url: receiver.url,
    secret: SECRET,
    headers: { authorization: 'Bearer receiver-token' },
    batchSize: 10_000,
    timeoutMs: 5_000,
    allNotifications: false,
    start: 'head',
    ...extra,
  };
}

function setup(): { runner: ProcedureRunner; pump: WebhookPump } {
  clock = new ManualClock(Date.UTC(2026, 5, 1));
  const runner = createProcedureRunner(database(), { clock, owner: `webhooks-test-${newId('o')}` });
  void runner.start();
  cleanups.push(() => runner.stop());
  return { runner, pump: new WebhookPump({ database: database(), runner, clock }) };
}

async function receiver(options: Partial<Parameters<typeof startReceiver>[0]> = {}): Promise<Receiver> {
  const started = await startReceiver({ secret: SECRET, now: () => clock.now(), seed: 1, ...options });
  cleanups.push(() => started.close());
  return started;
}

const waitUntil = (check: () => Promise<boolean>, what: string) => waitFor(what, check, Boolean, { everyMs: 10 });

/** No delivery procedure is due now: each is finished or waits for a later time of the manual clock. */
async function quiet(): Promise<boolean> {
  const due = await db().procedure.count({ where: { type: DELIVER_TYPE, state: { notIn: ['done', 'failed'] }, nextRunMs: { lte: BigInt(clock.now()) } } });
  return due === 0;
}

/** Runs attempts and backoffs (moving the manual clock past each backoff) until no delivery is pending. */
async function settle(): Promise<void> {
  for (let round = 0; round < 40; round++) {
    await waitUntil(quiet, 'delivery attempts in flight');
    if ((await db().webhookDelivery.count({ where: { status: 'pending' } })) === 0) return;
    // Past the longest backoff (60 s plus up to a quarter of jitter).
    await clock.advance(76_000);
  }
  throw new Error('deliveries still pending after 40 backoff rounds');
}

/** The deliveries of one tenant's destinations, in cut order. */
function deliveriesOf(tenantId: string) {
  return db().webhookDelivery.findMany({ where: { destination: { tenantId } }, orderBy: [{ fromSeq: 'asc' }, { fromOffset: 'asc' }] });
}

function usersOf(bodies: Iterable<string>): number[] {
  const users: number[] = [];
  for (const body of bodies) for (const move of JSON.parse(body).moves as { users: number[] }[]) users.push(...move.users);
  return users.sort((a, b) => a - b);
}

describe('webhook deliveries', () => {
  it('signs over timestamp and body; a receiver refuses a changed body, another secret and a replay outside the tolerance', () => {
    const now = Date.UTC(2026, 5, 1);
    const header = signatureHeader(SECRET, '{"a":1}', now);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(SECRET, header, '{"a":1}', now + 60_000)).toEqual({ ok: true, timestamp: now / 1000 });
    expect(verifySignature(SECRET, header, '{"a":2}', now).ok).toBe(false);
    expect(verifySignature('whsec_another-secret-000000', header, '{"a":1}', now).ok).toBe(false);
    expect(verifySignature(SECRET, header, '{"a":1}', now + 301_000)).toEqual({ ok: false, reason: 'timestamp outside the tolerance (a replay?)' });
    expect(verifySignature(SECRET, `${header},v1=00`, '{"a":1}', now).ok).toBe(true);
    expect(verifySignature(SECRET, 'garbage', '{"a":1}', now).ok).toBe(false);
  });

  it('cuts a bulk move into batches of at most batchSize ids, shares deliveries between single moves, and skips other tags', async () => {
    const { pump } = setup();
    const hook = await receiver();
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook, { batchSize: 10_000 }), clock.now());
    const bulk = Array.from({ length: 25_000 }, (_, i) => i * 3 + 1);
    await move(owner.id, { users: bulk });
    await move(owner.id, { user: 7, enterAction: 'send_email' });
    for (const user of [900_001, 900_002, 900_003]) await move(owner.id, { user });
    await move(owner.id, { user: 900_004, enterAction: 'send_email,webhook:crm' });
    expect(await pump.pumpOnce()).toBe(3);
    await settle();
    const deliveries = await deliveriesOf(owner.id);
    expect(deliveries.map((d) => d.users)).toEqual([10_000, 10_000, 5_004]);
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    // At least once: a slow answer on this loaded machine may be retried, never lost or changed.
    expect(new Set(hook.received.map((r) => r.id))).toEqual(new Set(deliveries.map((d) => d.id)));
    expect(hook.received.every((r) => r.verified)).toBe(true);
    expect(usersOf(hook.delivered.values())).toEqual([...bulk, 900_001, 900_002, 900_003, 900_004]);
    const last = JSON.parse(hook.delivered.get(deliveries[2].id)!);
    expect(last).toMatchObject({ id: deliveries[2].id, type: 'moves', tenant: owner.name, destination: 'crm' });
    expect(last.moves[0]).toMatchObject({ from: 'entry', to: 'notify', enterAction: 'webhook:crm', total: 25_000, offset: 20_000, count: 5_000 });
    expect(last.moves.slice(1).map((m: { users: number[] }) => m.users)).toEqual([[900_001], [900_002], [900_003], [900_004]]);
    // Nothing new: a second pump cuts nothing.
    expect(await pump.pumpOnce()).toBe(0);
  });

  it('delivers every move at least once to a receiver that fails, hangs and answers slowly at random (seeded)', async () => {
    const { pump } = setup();
    const hook = await receiver({ seed: 20261201, mix: { fail: 0.25, hang: 0.1, slow: 0.3 }, firstAttempts: ['fail', 'hang', 'slow', 'ok'] });
    const owner = await tenant();
    // A short timeout, so the attempts the receiver leaves hanging are abandoned quickly.
    await createDestination(database(), owner.id, destinationBody(hook, { batchSize: 100, timeoutMs: 1_000 }), clock.now());
    const everyone: number[] = [];
    for (let i = 0; i < 12; i++) {
      const users = Array.from({ length: 150 }, (_, j) => i * 1000 + j);
      everyone.push(...users);
      await move(owner.id, { users });
    }
    await pump.pumpOnce();
    await settle();
    const deliveries = await deliveriesOf(owner.id);
    expect(deliveries.length).toBe(18);
    expect(deliveries.every((d) => d.status === 'delivered')).toBe(true);
    expect(new Set(hook.delivered.keys())).toEqual(new Set(deliveries.map((d) => d.id)));
    expect(usersOf(hook.delivered.values())).toEqual(everyone);
    // The mix really happened: failed, hung and slow attempts, each retried under the same delivery id and body.
    const behaviours = new Set(hook.received.map((r) => r.behaviour));
    expect(behaviours).toEqual(new Set(['ok', 'fail', 'hang', 'slow']));
    const retried = deliveries.filter((d) => d.attempts > 1);
    expect(retried.length).toBeGreaterThan(0);
    for (const d of retried) expect(new Set(hook.received.filter((r) => r.id === d.id).map((r) => r.body))).toEqual(new Set([d.body]));
    // An attempt the receiver never answered was abandoned after the destination's timeout and tried again.
    const hung = hook.received.filter((r) => r.behaviour === 'hang').map((r) => r.id);
    expect(hung.length).toBeGreaterThan(0);
    for (const id of hung) expect(hook.delivered.has(id)).toBe(true);
  }, 60_000);

  it('fails a delivery after its retries, keeps it in the log, and a replay sends the same id and body again', async () => {
    const { runner, pump } = setup();
    const hook = await receiver({ mix: { fail: 1, hang: 0, slow: 0 } });
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook), clock.now());
    await move(owner.id, { users: [1, 2, 3] });
    await pump.pumpOnce();
    await settle();
    const [failed] = (await listDeliveries(database(), owner.id, 'crm', { limit: 50 }, ADMIN)).deliveries;
    expect(failed).toMatchObject({ type: 'moves', status: 'failed', attempts: MAX_RETRIES + 1, lastStatus: 500, users: 3 });
    expect(failed).toMatchObject({ lastError: 'HTTP 500', lastResponse: 'receiver failed on purpose' });
    // The receiver's answer may echo what the request carried (header values are write-only): API keys do not see it.
    const [seenByKey] = (await listDeliveries(database(), owner.id, 'crm', { limit: 50 }, KEY)).deliveries;
    expect(seenByKey.lastError).toBe('HTTP 500');
    expect(seenByKey).not.toHaveProperty('lastResponse');

    hook.setMix({ fail: 0, hang: 0, slow: 0 });
    expect(await replayDelivery(database(), runner, owner.id, 'crm', failed.id, KEY)).toMatchObject({ status: 'pending', replays: 1, attempts: 0 });
    await expect(replayDelivery(database(), runner, owner.id, 'crm', failed.id, KEY)).rejects.toThrow(/still pending/);
    await settle();
    const [delivered] = (await listDeliveries(database(), owner.id, 'crm', { limit: 50 }, ADMIN)).deliveries;
    expect(delivered).toMatchObject({ id: failed.id, status: 'delivered', attempts: 1, replays: 1, lastStatus: 200 });
    const sent = hook.received.filter((r) => r.id === failed.id);
    expect(sent).toHaveLength(MAX_RETRIES + 2);
    expect(new Set(sent.map((r) => r.body)).size).toBe(1);
  }, 60_000);

  it('fails a delivery at once, without a request, when the tenant is no longer allowed the private address it names', async () => {
    const { pump } = setup();
    const hook = await receiver();
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook), clock.now());
    await updateTenantLimits(database(), owner.id, { webhookPrivateAddresses: null });
    await move(owner.id, { users: [1, 2] });
    await pump.pumpOnce();
    await settle();
    const [refused] = (await listDeliveries(database(), owner.id, 'crm', { limit: 50 }, KEY)).deliveries;
    expect(refused).toMatchObject({ status: 'failed', attempts: 1, lastStatus: null });
    expect(refused.lastError).toMatch(/^refused: 127\.0\.0\.1 is a loopback address .*webhookPrivateAddresses/);
    expect(hook.received).toHaveLength(0);
  });

  it('reports moves journal retention deleted before they were cut as one lost delivery, then goes on', async () => {
    const { pump } = setup();
    const hook = await receiver();
    const [owner, other] = [await tenant(), await tenant()];
    await createDestination(database(), owner.id, destinationBody(hook), clock.now());
    await createDestination(database(), other.id, destinationBody(hook, { name: 'crm' }), clock.now());
    const before = (await requireDestination(database(), owner.id, 'crm')).cursor;
    const old = [await move(owner.id, { user: 1 }), await move(owner.id, { users: [2, 3] })];
    // Two hours later, with a one-hour retention, the old moves go before the pump read them.
    await clock.advance(2 * 3_600_000);
    await updateTenantLimits(database(), owner.id, { journalRetentionHours: 1 });
    const fresh = await move(owner.id, { user: 4 });
    expect(await applyJournalRetention(database(), clock)).toBe(2);
    expect(await pump.pumpOnce()).toBe(2);
    await settle();
    const deliveries = await deliveriesOf(owner.id);
    expect(deliveries.map((d) => [d.status, d.users])).toEqual([
      ['delivered', 0],
      ['delivered', 1],
    ]);
    const lost = JSON.parse(hook.delivered.get(deliveries[0].id)!);
    expect(lost).toEqual({
      id: deliveries[0].id,
      type: 'lost',
      tenant: owner.name,
      destination: 'crm',
      lost: { after: Number(before), through: old[1] },
    });
    expect(usersOf([deliveries[1].body])).toEqual([4]);
    expect(JSON.parse(deliveries[1].body).moves[0].seq).toBe(fresh);
    const [moves, report] = (await listDeliveries(database(), owner.id, 'crm', { limit: 50 }, KEY)).deliveries;
    expect(moves.type).toBe('moves');
    expect(report).toMatchObject({ type: 'lost', lost: { after: Number(before), through: old[1] }, users: 0 });
    expect(destinationView(await requireDestination(database(), owner.id, 'crm'))).toMatchObject({ lostThrough: old[1], cursor: fresh });
    // Reported once; the other tenant lost nothing.
    expect(await pump.pumpOnce()).toBe(0);
    expect(await deliveriesOf(other.id)).toHaveLength(0);
  });

  it('a destination with allNotifications receives every move of its tenant, and no other tenant’s', async () => {
    const { pump } = setup();
    const hook = await receiver();
    const [owner, other] = [await tenant(), await tenant()];
    await createDestination(database(), owner.id, destinationBody(hook, { name: 'everything', allNotifications: true }), clock.now());
    await move(owner.id, { user: 1, enterAction: null });
    await move(owner.id, { users: [2, 3], enterAction: 'send_email' });
    await move(other.id, { user: 4, enterAction: null });
    await pump.pumpOnce();
    await settle();
    expect(usersOf(hook.delivered.values())).toEqual([1, 2, 3]);
  });

  it('starts at the tail by default and resumes from its cursor after a restart without cutting anything twice', async () => {
    const { runner, pump } = setup();
    const hook = await receiver();
    const owner = await tenant();
    await move(owner.id, { user: 1 });
    await createDestination(database(), owner.id, destinationBody(hook, { start: 'tail' }), clock.now());
    await move(owner.id, { user: 2 });
    await pump.pumpOnce();
    await move(owner.id, { user: 3 });
    // A "crash" between committing a round and submitting its procedures: the deliveries are pending, with no procedure.
    const destination = await requireDestination(database(), owner.id, 'crm');
    const round = await cutRound(database(), destination, owner.name, clock.now());
    expect(await commitRound(database(), destination, round)).toBe(true);
    // A second process that read the same cursor loses the compare-and-set and commits nothing.
    expect(await commitRound(database(), destination, round)).toBe(false);
    const restarted = new WebhookPump({ database: database(), runner, clock });
    expect(await submitOrphans(database(), runner)).toBe(1);
    expect(await restarted.pumpOnce()).toBe(0);
    await settle();
    expect(usersOf(hook.delivered.values())).toEqual([2, 3]);
    expect(await deliveriesOf(owner.id)).toHaveLength(2);
  });

  it('cuts a move larger than one round over several rounds, each user exactly once', async () => {
    const { pump } = setup();
    const hook = await receiver();
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook, { batchSize: 100_000 }), clock.now());
    const users = new RoaringBitmap32();
    users.addRange(0, 1_234_567);
    await move(owner.id, { users });
    expect(await pump.pumpOnce()).toBe(13);
    const deliveries = await deliveriesOf(owner.id);
    expect(deliveries.map((d) => d.fromOffset)).toEqual(Array.from({ length: 13 }, (_, i) => i * 100_000));
    expect(deliveries.reduce((sum, d) => sum + d.users, 0)).toBe(1_234_567);
    await settle();
    const delivered = usersOf(hook.delivered.values());
    expect(delivered).toHaveLength(1_234_567);
    expect(delivered[0]).toBe(0);
    expect(delivered.at(-1)).toBe(1_234_566);
  }, 60_000);

  it('warns when a saved workflow sends users to a destination the tenant does not have', async () => {
    setup();
    const hook = await receiver();
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook), clock.now());
    const definition = {
      steps: [
        { name: 'entry', kind: 'direct' as const, enterAction: 'send_email, webhook:crm', next: 'fanout' },
        { name: 'fanout', kind: 'parallel' as const, actions: ['webhook:crm', 'webhook:billing'] },
      ],
    };
    const row = (await db().tenant.findUnique({ where: { id: owner.id } }))!;
    const warnings = await workflowWarnings(database(), row, definition, null);
    expect(warnings).toEqual([
      { step: 'fanout', code: 'unknown_webhook', message: expect.stringMatching(/webhook destination "billing", but tenant .* has no destination/) },
    ]);
  });

  it('keeps delivered and failed deliveries for the retention, then removes them', async () => {
    const { runner, pump } = setup();
    const hook = await receiver();
    const owner = await tenant();
    await createDestination(database(), owner.id, destinationBody(hook), clock.now());
    await move(owner.id, { user: 1 });
    await pump.pumpOnce();
    await settle();
    const [delivered] = await deliveriesOf(owner.id);
    expect(delivered.status).toBe('delivered');
    const copy = (suffix: number, status: string, createdAt: Date) => ({ ...delivered, id: `${delivered.id}${suffix}`, fromOffset: suffix, status, createdAt });
    await db().webhookDelivery.createMany({
      data: [copy(8, 'failed', delivered.createdAt), copy(9, 'delivered', new Date(delivered.createdAt.getTime() + 120_000))],
    });
    // The runner polls on the manual clock; stopped, a week passes in one step.
    await runner.stop();
    await clock.advance(DELIVERY_RETENTION_MS - 60_000);
    await pump.pumpOnce();
    expect(await deliveriesOf(owner.id)).toHaveLength(3);
    await clock.advance(120_000);
    await pump.pumpOnce();
    expect((await deliveriesOf(owner.id)).map((d) => d.fromOffset)).toEqual([9]);
  });
});
