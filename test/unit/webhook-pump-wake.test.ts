import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../server/clock';
import { createProcedureRunner } from '../../server/procedures/runner';
import { database } from '../helpers/app-db';
import { WebhookPump } from '../../server/webhooks/pump';
import { newId } from '../../server/ids';

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** A started pump on a ManualClock whose rounds are recorded (at the clock's time, from its start) instead of run. */
function startedPump() {
  const start = Date.UTC(2026, 5, 1);
  const clock = new ManualClock(start);
  const runner = createProcedureRunner(database(), { clock, owner: `pump-wake-${newId('o')}` });
  const pump = new WebhookPump({ database: database(), runner, clock, pollMs: 250, idlePollMs: 2_000 });
  const rounds: number[] = [];
  vi.spyOn(pump, 'pumpOnce').mockImplementation(async () => (rounds.push(clock.now() - start), 0));
  pump.start();
  stop = () => pump.stop();
  /** Moves the clock once the pump sleeps, and returns once it sleeps again. */
  const advance = async (ms: number) => {
    await pump.settled();
    await clock.advance(ms);
    await pump.settled();
  };
  return { advance, pump, rounds };
}

describe('the webhook pump', () => {
  it('polls every idlePollMs when nobody wakes it', async () => {
    const { advance, rounds } = startedPump();
    await advance(1_999);
    expect(rounds).toEqual([0]);
    await advance(1);
    expect(rounds).toEqual([0, 2_000]);
  });

  it('runs a round at once when its engine commits, and at most one per pollMs during a burst of commits', async () => {
    const { advance, pump, rounds } = startedPump();
    await advance(1_000);
    pump.wake();
    await advance(0);
    expect(rounds).toEqual([0, 1_000]);
    await advance(100);
    pump.wake(); // during the gap after a round: the next round comes when the gap ends
    pump.wake();
    await advance(149);
    expect(rounds).toEqual([0, 1_000]);
    await advance(1);
    expect(rounds).toEqual([0, 1_000, 1_250]);
  });
});
