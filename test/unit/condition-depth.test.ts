import { describe, expect, it } from 'vitest';
import { analyzeCondition, MAX_CONDITION_DEPTH } from '../../core/conditions/analyze';

describe('condition nesting limit', () => {
  it(`accepts ${MAX_CONDITION_DEPTH} "!" (the documented limit) and refuses deeper ones with a clear message`, () => {
    expect(analyzeCondition(`${'!'.repeat(MAX_CONDITION_DEPTH)}true`).ok).toBe(true);
    for (const count of [MAX_CONDITION_DEPTH + 1, 4000, 50_000]) {
      const analysis = analyzeCondition(`${'!'.repeat(count)}true`);
      expect(analysis.ok).toBe(false);
      if (!analysis.ok) expect(analysis.problem).toMatch(/nested too deeply/);
    }
  });
});
