import { describe, expect, it } from 'vitest';
import { appendEncoded } from '../../server/engine/ingest-commit';
import { encodeRequest } from '../../server/engine/ingest-encode';
import { USER_BLOCK } from '../../server/engine/partitioning';
import { hashIds, IdTable } from '../../server/engine/ingest-id-table';
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
  it('gives 0:0 to events without an id only, and different words to different ids', () => {
    const hashes = hashIds(['a', undefined, 'b', '']);
    expect([hashes[2], hashes[3]]).toEqual([0, 0]);
    expect(hashes[0] !== 0 || hashes[1] !== 0).toBe(true);
    expect(hashes[6] !== 0 || hashes[7] !== 0).toBe(true);
    expect([hashes[0], hashes[1]]).not.toEqual([hashes[4], hashes[5]]);
    const many = hashIds(Array.from({ length: 100_000 }, (_, i) => `evt-${i}`));
    const seen = new Set<string>();
    for (let i = 0; i < many.length; i += 2) seen.add(`${many[i]}:${many[i + 1]}`);
    expect(seen.size).toBe(100_000);
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
  it('appends both of two different ids whose hashes collide, and only once each', async () => {
    const tenantId = newId('tn');
    await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions: 1 } });
    const colliding = (ids: string[]) => {
      const request = encodeRequest(
        { events: ids.map((_, i) => ({ user: 10 + i, type: 'x', data: {}, time: NOW })), ids },
        { partitions: 1, userBlock: USER_BLOCK },
      );
      request.ids!.hashes.fill(42); // every id of the request gets the same hash, 42:42
      return request;
    };
    expect(await appendEncoded(database(), app().state, tenantId, colliding(['first', 'second']), NOW)).toMatchObject({ accepted: 2, duplicates: 0 });
    expect(await appendEncoded(database(), app().state, tenantId, colliding(['second', 'third', 'first']), NOW)).toMatchObject({ accepted: 3, duplicates: 2 });
    // A restart: the ids are read back from the IngestRecord rows and hashed for real, as a request's are.
    app().state.ingestDedupe.clear();
    const request = encodeRequest(
      { events: [10, 11].map((user) => ({ user, type: 'x', data: {}, time: NOW })), ids: ['third', 'fourth'] },
      { partitions: 1, userBlock: USER_BLOCK },
    );
    expect(await appendEncoded(database(), app().state, tenantId, request, NOW)).toMatchObject({ accepted: 2, duplicates: 1 });
    const rows = await db().eventLog.findMany({ where: { tenantId }, orderBy: { offset: 'asc' } });
    expect(rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user))).toEqual([10, 11, 11, 11]);
  });
});
