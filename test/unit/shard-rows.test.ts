import { describe, expect, it } from 'vitest';
import { BYTES_PER_STATEMENT, uniqueShardChunks } from '../../server/storage/journal/shard-rows';

describe('rows keyed by shard', () => {
  it('go in chunks in which no shard repeats, in their order, so a later row of a shard still wins', () => {
    const rows = [
      { instanceId: 'a', partition: 0, v: 1 },
      { instanceId: 'a', partition: 1, v: 2 },
      { instanceId: 'b', partition: 0, v: 3 },
      { instanceId: 'a', partition: 0, v: 4 },
      { instanceId: 'a', partition: 1, v: 5 },
    ];
    expect(uniqueShardChunks(rows).map((chunk) => chunk.map((row) => row.v))).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
  });

  it('are at most 500 to a statement', () => {
    const rows = Array.from({ length: 1_201 }, (_, partition) => ({ instanceId: 'a', partition }));
    expect(uniqueShardChunks(rows).map((chunk) => chunk.length)).toEqual([500, 500, 201]);
    expect(uniqueShardChunks([])).toEqual([]);
  });

  it('bind at most a megabyte to a statement, and a larger row goes alone', () => {
    const rows = [0.4, 0.4, 0.4, 2, 0.1].map((mb, partition) => ({ instanceId: 'a', partition, bytes: Math.round(mb * BYTES_PER_STATEMENT) }));
    expect(uniqueShardChunks(rows, (row) => row.bytes).map((chunk) => chunk.map((row) => row.partition))).toEqual([[0, 1], [2], [3], [4]]);
  });
});
