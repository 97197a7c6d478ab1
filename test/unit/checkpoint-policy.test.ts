import { describe, expect, it } from 'vitest';
import { checkpointMovesAfter } from '../../server/engine/partition';

describe('when a partition writes its next checkpoint', () => {
  it('after the configured moves while its checkpoints are small', () => {
    expect(checkpointMovesAfter(20_000, 0)).toBe(20_000);
    expect(checkpointMovesAfter(20_000, 4_096)).toBe(20_000);
  });

  it('after as many moves as outweigh a big checkpoint, so it is not rewritten more often than its rows weigh', () => {
    // 10M scattered users in a partition: bitset containers, ~1.25 MB a step
    expect(checkpointMovesAfter(20_000, 2_500_000)).toBe(Math.ceil(2_500_000 / 64));
    expect(checkpointMovesAfter(1, 640)).toBe(10);
  });
});
