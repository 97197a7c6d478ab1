import { describe, expect, it } from 'vitest';
import { QUERY_DEADLINE_MS, usersPerCheckpoint } from '../../server/conditions/deadline';
import { checkCondition } from '../../core/conditions/gate';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { saveCrowd } from '../../server/crowd/store';
import { FairTurns } from '../../server/engine/slices';
import { AppError } from '../../server/errors';
import { newId } from '../../server/ids';
import { estimateAudience } from '../../server/profiles/audience';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { loopTurns } from '../helpers/loop-turns';

// Item 2 of issue 34 on the audience's per-user loop, with a clock the test drives: each look at it moves it 1 ms, so
// "how long" is "how many looks", the same on any machine.

/** A clock that moves 1 ms each time it is read, and notes how many turns the rest of the thread had by then. */
function steppingClock() {
  let now = 0;
  const turns = loopTurns();
  const reads: number[] = [];
  return {
    now: () => {
      reads.push(turns.count);
      return now++;
    },
    reads,
    stop: () => turns.stop(),
  };
}

async function tenantWithCrowd(users: number): Promise<string> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 1 } });
  const crowd = new RoaringBitmap32();
  crowd.addRange(0, users);
  await saveCrowd(database(), tenantId, 'everyone', crowd, 'replace');
  return tenantId;
}

describe('the deadline of an audience estimate', () => {
  it('stops the per-user loop at the deadline with 422 query_deadline saying how far it got', async () => {
    const tenantId = await tenantWithCrowd(50_000);
    const clock = steppingClock();
    const body = { condition: 'user % 3 == 0', crowd: 'everyone', sample: 0 };
    let thrown: unknown;
    try {
      await estimateAudience(database(), tenantId, body, { clock, now: 0, deadlineMs: 40 });
    } catch (error) {
      thrown = error;
    } finally {
      clock.stop();
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect(thrown).toMatchObject({ code: 'query_deadline', status: 422, details: { deadlineMs: 40 } });
    const evaluated = Number(/\(([\d,]+) of 50,000 users evaluated\)/.exec((thrown as AppError).message)?.[1].replace(/,/g, ''));
    // A cheap condition looks at the clock every 256 users (the yields read it once more each).
    const check = checkCondition(body.condition);
    expect(check.ok && usersPerCheckpoint(check.condition.cost)).toBe(256);
    expect(evaluated).toBeGreaterThan(0);
    expect(evaluated).toBeLessThanOrEqual(40 * 256);
    expect(evaluated % 256).toBe(0);
  });

  it('yields the thread every 10 ms of the clock while it evaluates, and counts exactly within the deadline', async () => {
    const tenantId = await tenantWithCrowd(50_000);
    const clock = steppingClock();
    const result = await estimateAudience(
      database(),
      tenantId,
      { condition: 'user % 3 == 0', crowd: 'everyone', sample: 3 },
      { clock, now: 0, deadlineMs: 1_000_000 },
    ).finally(() => clock.stop());
    expect(result).toMatchObject({ count: 16_667, sample: [0, 3, 6], universe: 50_000, mode: 'per-user', exact: true, evaluated: 50_000 });
    // The clock is first read when the evaluation starts (the index and crowd are loaded by then). Between that and
    // its last read the thread's other work got turns; without the yields the loop is one synchronous run.
    expect(clock.reads.length).toBeGreaterThan(50_000 / 256);
    expect(clock.reads.at(-1)! - clock.reads[0]).toBeGreaterThanOrEqual(15);
  });

  it("waits for its tenant's turns of the engine thread, round-robin with another tenant's long work", async () => {
    const tenantId = await tenantWithCrowd(50_000);
    const clock = steppingClock();
    const fair = new FairTurns();
    const order: string[] = [];
    // The other tenant's work starts waiting for turns once the estimate evaluates (not while it reads the index).
    let evaluating!: () => void;
    const firstTurn = new Promise<void>((resolve) => (evaluating = resolve));
    const turn = async () => {
      evaluating();
      await fair.next(tenantId);
      order.push('a');
    };
    const other = Array.from({ length: 4 }, async () => {
      await firstTurn;
      for (let i = 0; i < 3; i++) {
        await fair.next('another tenant');
        order.push('b');
      }
    });
    const estimate = estimateAudience(
      database(),
      tenantId,
      { condition: 'user % 3 == 0', crowd: 'everyone', sample: 0 },
      { clock, now: 0, deadlineMs: 1_000_000, turn },
    ).finally(() => {
      clock.stop();
      evaluating(); // an estimate that never took a turn lets the other tenant go on now
    });
    const [result] = await Promise.all([estimate, ...other]);
    expect(result).toMatchObject({ count: 16_667, exact: true });
    // Every yield of the estimate is one of its tenant's turns, and the other tenant's four tasks got one turn per
    // round, not four: no two of theirs in a row while the estimate still waited for turns.
    const lastB = order.lastIndexOf('b');
    expect(order.filter((t) => t === 'a').length).toBeGreaterThan(order.filter((t) => t === 'b').length);
    expect(order.slice(0, lastB + 1).join('')).not.toContain('bb');
  });

  it('meters a bitmap plan leaf by leaf: yields between its leaves, and stops it at the deadline', async () => {
    const tenantId = await tenantWithCrowd(0);
    await upsertProfiles(
      database(),
      tenantId,
      Array.from({ length: 1_000 }, (_, user) => ({ user, attributes: { score: user % 100 } })),
    );
    // 40 profile comparisons, each a leaf of the plan (no per-user evaluation at all).
    const condition = Array.from({ length: 40 }, (_, k) => `profile.score == ${k}`).join(' || ');
    const metered = steppingClock();
    const result = await estimateAudience(database(), tenantId, { condition, sample: 0 }, { clock: metered, now: 0, deadlineMs: 1_000_000 }).finally(() =>
      metered.stop(),
    );
    expect(result).toMatchObject({ count: 400, mode: 'plan', exact: true });
    // One look at the clock a leaf, and the thread's other work had turns between the first look and the last.
    expect(metered.reads.length).toBeGreaterThanOrEqual(40);
    expect(metered.reads.at(-1)! - metered.reads[0]).toBeGreaterThanOrEqual(3);

    // Another plan (the first one's result is cached until the next profile write).
    const other = Array.from({ length: 40 }, (_, k) => `profile.score == ${40 + k}`).join(' || ');
    const stopped = steppingClock();
    const thrown = await estimateAudience(database(), tenantId, { condition: other, sample: 0 }, { clock: stopped, now: 0, deadlineMs: 20 })
      .catch((error: unknown) => error)
      .finally(() => stopped.stop());
    expect(thrown).toMatchObject({ code: 'query_deadline', status: 422, details: { deadlineMs: 20 } });
    expect((thrown as AppError).message).toContain('its bitmap plan partly evaluated');
  });

  it('defaults to 2 s', () => {
    expect(QUERY_DEADLINE_MS).toBe(2_000);
  });
});
