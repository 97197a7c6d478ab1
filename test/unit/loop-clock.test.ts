import { expect, it } from 'vitest';
import { LoopIdle, ManualClock } from '../../server/clock';

// How loops wait on the injected clock (server/clock.ts): a coarse sleeper wakes once at the end of a jump, and a
// test can await a loop settling instead of sleeping.

/** A loop that notes the clock's time each time it wakes, sleeping `everyMs` (coarse or not) until stopped. */
function noteEvery(clock: ManualClock, everyMs: number, coarse: boolean) {
  const idle = new LoopIdle(clock);
  const stop = new AbortController();
  const woke: number[] = [];
  idle.started();
  const loop = (async () => {
    while (!stop.signal.aborted) {
      await idle.sleep(everyMs, stop.signal, { coarse });
      if (!stop.signal.aborted) woke.push(clock.now());
    }
  })().finally(() => idle.stopped());
  return { idle, woke, stop: () => (stop.abort(), loop) };
}

it('wakes a sleeper at every instant of a jump, a coarse one once at its end', async () => {
  const clock = new ManualClock(0);
  const fine = noteEvery(clock, 60_000, false);
  const coarse = noteEvery(clock, 60_000, true);
  await clock.advance(3 * 60_000 + 1_000);
  expect(fine.woke).toEqual([60_000, 120_000, 180_000]);
  expect(coarse.woke).toEqual([181_000]);
  await clock.advance(30_000); // not due yet
  expect(coarse.woke).toEqual([181_000]);
  await clock.advance(30_000);
  expect(coarse.woke).toEqual([181_000, 241_000]);
  await fine.stop();
  await coarse.stop();
});

it('settles once the loop sleeps with its time still to come, not while it works', async () => {
  const clock = new ManualClock(0);
  const idle = new LoopIdle(clock);
  let settled = false;
  idle.started(); // at work
  const waiting = idle.settled().then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  expect(settled).toBe(false);
  const stop = new AbortController();
  const sleeping = idle.sleep(1_000, stop.signal);
  await waiting;
  expect(idle.isAsleep()).toBe(true);

  // Its time came: awake (working) until it sleeps again.
  await clock.advance(1_000);
  await sleeping;
  expect(idle.isAsleep()).toBe(false);
  // Woken by its signal: awake at once.
  const again = idle.sleep(1_000, stop.signal);
  expect(idle.isAsleep()).toBe(true);
  stop.abort();
  expect(idle.isAsleep()).toBe(false);
  await again;
  idle.stopped();
  await idle.settled();
});
