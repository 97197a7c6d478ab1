import { describe, expect, it } from 'vitest';
import { exitSteps, FINEST_TICK, timeTicks } from '../../studio/editor/chart-scale';
import { welcomeJourney } from '../../core/model/sample-workflows';

const AT = Date.UTC(2026, 11, 5, 8, 5, 7);
const MINUTE = 60_000;

describe('the counts chart’s time axis', () => {
  it('never writes a time twice, however short or long the span', () => {
    for (const span of [1_000, 20_000, 50_000, 3 * MINUTE, 47 * MINUTE, 5 * 60 * MINUTE, 24 * 60 * MINUTE]) {
      const { ticks, label } = timeTicks(AT, AT + span, FINEST_TICK.minute);
      const labels = ticks.map(label);
      expect(new Set(labels).size, `${span} ms: ${labels.join(' | ')}`).toBe(labels.length);
      expect(ticks.length).toBeLessThanOrEqual(7);
      for (const tick of ticks) expect(tick >= AT && tick <= AT + span).toBe(true);
    }
  });

  it('ticks a new instance’s half minute in seconds, and a day of hours by the hour', () => {
    expect(timeTicks(AT, AT + 30_000, FINEST_TICK.minute).ticks).toEqual([10, 15, 20, 25, 30, 35].map((s) => Date.UTC(2026, 11, 5, 8, 5, s)));
    const day = timeTicks(AT, AT + 24 * 60 * MINUTE, FINEST_TICK.hour).ticks;
    expect(day.every((tick) => tick % (60 * MINUTE) === 0)).toBe(true);
  });

  it('keeps at least one tick when the span is shorter than the finest spacing', () => {
    expect(timeTicks(AT, AT + 10 * MINUTE, FINEST_TICK.day).ticks).toEqual([AT]);
  });
});

describe('the series the chart opens on', () => {
  it('are the steps users leave the journey from', () => {
    expect(exitSteps(welcomeJourney.steps)).toEqual(['customer', 'done']);
  });
});
