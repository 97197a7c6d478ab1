import { describe, expect, it } from 'vitest';
import { appendEncoded } from '../../server/engine/ingest-commit';
import { encodeRequest } from '../../server/engine/ingest-encode';
import { USER_BLOCK } from '../../server/engine/partitioning';
import { hashIds, ID_HASH_WORDS, IdTable } from '../../server/engine/ingest-id-table';
import { decodeEvents } from '../../server/engine/log-codec';
import { newId } from '../../server/ids';
import { app } from '../../server/app';
import { db, database } from '../helpers/app-db';

const NOW = Date.UTC(2026, 0, 1, 12);

/** A table over string ids kept in `lists[list][position]`, as TenantDedupe keeps them. */
function tableOver(lists: string[][]): IdTable {
  return new IdTable((list, position, other, otherPosition) => lists[list][position] === lists[other][otherPosition]);
}

describe('hashIds', () => {
  it('gives all-zero words to events without an id only, and different words to different ids', () => {
    const hashes = hashIds(['a', undefined, 'b', '']);
    const words = (i: number) => [...hashes.subarray(ID_HASH_WORDS * i, ID_HASH_WORDS * (i + 1))];
    expect(words(1)).toEqual([0, 0, 0, 0]);
    for (const i of [0, 2, 3]) expect(words(i)[0] !== 0 || words(i)[1] !== 0).toBe(true);
    expect(words(0)).not.toEqual(words(2));
    const many = hashIds(Array.from({ length: 100_000 }, (_, i) => `evt-${i}`));
    const probes = new Set<string>();
    const tails = new Set<string>();
    for (let i = 0; i < many.length; i += ID_HASH_WORDS) {
      probes.add(`${many[i]}:${many[i + 1]}`);
      tails.add(`${many[i + 2]}:${many[i + 3]}`);
    }
    // Both halves tell every id apart on their own: the table's probe words and the words it compares.
    expect(probes.size).toBe(100_000);
    expect(tails.size).toBe(100_000);
  });
});

describe('IdTable', () => {
  it('claims an id once, and keeps two different ids with the same hash apart', () => {
    const lists = [
      ['x', 'y'],
      ['x', 'y', 'z'],
    ];
    const table = tableOver(lists);
    expect(table.claim(7, 9, 0, 0)).toBe(true);
    expect(table.claim(7, 9, 0, 1)).toBe(true); // 'y': the same hash as 'x', another id
    expect(table.claim(7, 9, 1, 0)).toBe(false);
    expect(table.claim(7, 9, 1, 1)).toBe(false);
    expect(table.claim(7, 9, 1, 2)).toBe(true);
    table.remove(7, 9, 0, 0);
    expect(table.claim(7, 9, 1, 0)).toBe(true);
    expect(table.claim(7, 9, 1, 1)).toBe(false);
    expect(table.size).toBe(3);
  });

  it('agrees with a Set through growth and removals in crowded probe runs', () => {
    const ids = Array.from({ length: 5_000 }, (_, i) => `id-${i}`);
    const table = tableOver([ids]);
    // Few distinct hashes and probe starts: long runs, many equal hashes, wrap-around at the table's end.
    const hashOf = (i: number) => [1 + (i % 3), 1021 + (i % 40)] as const;
    const reference = new Set<number>();
    let state = 1;
    const random = () => (state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    for (let step = 0; step < 30_000; step++) {
      const i = Math.floor(random() * ids.length);
      const [high, low] = hashOf(i);
      if (random() < 0.6) {
        expect(table.claim(high, low, 0, i)).toBe(!reference.has(i));
        reference.add(i);
      } else {
        table.remove(high, low, 0, i);
        reference.delete(i);
      }
    }
    expect(table.size).toBe(reference.size);
    for (let i = 0; i < ids.length; i++) expect(table.claim(...hashOf(i), 0, i)).toBe(!reference.has(i));
  });
});

describe('event ids with equal hashes', () => {
  /** A request whose ids all share the table's probe words (42:42); the other 64 bits stay theirs. */
  const colliding = (ids: string[], users = ids.map((_, i) => 10 + i)) => {
    const request = encodeRequest({ events: users.map((user) => ({ user, type: 'x', data: {}, time: NOW })), ids }, { partitions: 1, userBlock: USER_BLOCK });
    const { hashes } = request.ids!;
    for (let at = 0; at < hashes.length; at += ID_HASH_WORDS) hashes.fill(42, at, at + 2);
    return request;
  };

  it('appends both of two different ids whose probe words collide, and only once each, before and after a restart', async () => {
    const tenantId = await tenantRow();
    expect(await appendEncoded(database(), app().state, tenantId, colliding(['first', 'second']), NOW)).toMatchObject({ accepted: 2, duplicates: 0 });
    expect(await appendEncoded(database(), app().state, tenantId, colliding(['second', 'third', 'first']), NOW)).toMatchObject({ accepted: 3, duplicates: 2 });
    // A restart: the hashes are read back from the IngestRecord rows.
    app().state.ingestDedupe.clear();
    expect(await appendEncoded(database(), app().state, tenantId, colliding(['third', 'fourth'], [10, 11]), NOW)).toMatchObject({ accepted: 2, duplicates: 1 });
    const rows = await db().eventLog.findMany({ where: { tenantId }, orderBy: { offset: 'asc' } });
    expect(rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user))).toEqual([10, 11, 11, 11]);
    // What is stored is 16 bytes per appended id, no id text.
    const records = await db().ingestRecord.findMany({ where: { tenantId }, orderBy: { seq: 'asc' } });
    expect(records.map((r) => [r.eventIds, r.eventHashes?.length])).toEqual([
      [null, 32],
      [null, 16],
      [null, 16],
    ]);
  });

  it('reads the ids of a record written before the hashes were stored (their JSON) and hashes them as requests are', async () => {
    const tenantId = await tenantRow();
    await db().ingestRecord.create({ data: { tenantId, seq: 1n, accepted: 1, duplicates: 0, eventIds: '["old"]', createdAtMs: BigInt(NOW) } });
    app().state.ingestDedupe.clear();
    const request = encodeRequest(
      { events: [20, 21].map((user) => ({ user, type: 'x', data: {}, time: NOW })), ids: ['old', 'new'] },
      { partitions: 1, userBlock: USER_BLOCK },
    );
    expect(await appendEncoded(database(), app().state, tenantId, request, NOW)).toMatchObject({ accepted: 2, duplicates: 1 });
    const rows = await db().eventLog.findMany({ where: { tenantId } });
    expect(rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user))).toEqual([21]);
  });
});

async function tenantRow(): Promise<string> {
  const tenantId = newId('tn');
  await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 1 } });
  return tenantId;
}
