import { describe, expect, it } from 'vitest';
import { ENGINE_PING_EVERY_MS, ENGINE_UNRESPONSIVE_MS, EngineLiveness } from '../../server/engine/liveness';

describe('engine thread liveness (as the request thread sees it)', () => {
  it('asks a silent thread once per silence and calls it unresponsive only after the bound', () => {
    let now = 1_000_000;
    const liveness = new EngineLiveness(() => now);
    expect(liveness.shouldAsk()).toBe(false); // just heard of (started)
    now += ENGINE_PING_EVERY_MS;
    expect(liveness.shouldAsk()).toBe(true);
    expect(liveness.shouldAsk()).toBe(false); // the question is still open: no second one
    now += ENGINE_UNRESPONSIVE_MS - ENGINE_PING_EVERY_MS - 1;
    expect(liveness.responsive()).toBe(true);
    expect(liveness.shouldAsk()).toBe(false);
    now += 1;
    expect(liveness.responsive()).toBe(false);

    liveness.heard(); // it answered after all (it was busy, not hung)
    expect(liveness.responsive()).toBe(true);
    expect(liveness.shouldAsk()).toBe(false);
    now += ENGINE_PING_EVERY_MS;
    expect(liveness.shouldAsk()).toBe(true);
  });
});
