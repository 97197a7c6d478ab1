import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../server/clock';
import { advance, crowd, range, start, startHarness, stepUsers, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('timer steps in a time zone', () => {
  it('fire at 09:00 Amsterdam wall-clock time on both sides of the spring daylight-saving change', async () => {
    // Friday 2026-03-27 12:00 UTC; Amsterdam leaves CET (UTC+1) for CEST (UTC+2) on Sunday 2026-03-29.
    h = await startHarness(2, new ManualClock(Date.UTC(2026, 2, 27, 12)));
    const wf = await workflow(h, {
      steps: [
        { name: 'saturday', kind: 'timer', cron: '0 0 9 * * SAT', tz: 'Europe/Amsterdam', next: 'sunday' },
        { name: 'sunday', kind: 'timer', cron: '0 0 9 * * SUN', tz: 'Europe/Amsterdam', next: 'done' },
        { name: 'done', kind: 'direct' },
      ],
    });
    await crowd(h, 'c', range(1, 10));
    const id = await start(h, wf, 'c');

    const to = async (utc: number) => advance(h, utc - h.clock.now());
    await to(Date.UTC(2026, 2, 28, 7, 59, 59)); // 08:59:59 CET
    expect(await stepUsers(h, id, 'saturday')).toEqual(range(1, 10));
    await to(Date.UTC(2026, 2, 28, 8)); // 09:00 CET = 08:00 UTC
    expect(await stepUsers(h, id, 'sunday')).toEqual(range(1, 10));
    await to(Date.UTC(2026, 2, 29, 6, 59, 59)); // 08:59:59 CEST
    expect(await stepUsers(h, id, 'sunday')).toEqual(range(1, 10));
    await to(Date.UTC(2026, 2, 29, 7)); // 09:00 CEST = 07:00 UTC, an hour earlier in UTC than the day before
    expect(await stepUsers(h, id, 'done')).toEqual(range(1, 10));
  });
});
