import { describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { onCrowdChanged, type CrowdChange } from '../../server/crowd/changes';
import { combine, combineCrowds, deleteCrowd, listCrowds, loadCrowd, requireCrowd, requireCrowdMeta, saveCrowd } from '../../server/crowd/store';
import { loopTurns } from '../helpers/loop-turns';
import { tenantRow } from '../helpers/tenant-row';
import { database } from '../helpers/app-db';

describe('crowd store', () => {
  it('saves, replaces, loads and deletes a crowd, telling listeners after each change', async () => {
    const tenantId = await tenantRow('tn_store');
    const heard: Array<[string, string, CrowdChange]> = [];
    const unsubscribe = onCrowdChanged(database(), (tenant, name, change) => heard.push([tenant, name, change]));

    const first = await saveCrowd(database(), tenantId, 'vip', RoaringBitmap32.from([1, 2, 3]), 'create');
    expect(first.created).toBe(true);
    expect(first.crowd).toMatchObject({ name: 'vip', count: 3 });
    await expect(saveCrowd(database(), tenantId, 'vip', RoaringBitmap32.from([9]), 'create')).rejects.toMatchObject({ code: 'conflict' });
    const replaced = await saveCrowd(database(), tenantId, 'vip', RoaringBitmap32.from([7, 8]), 'replace');
    expect(replaced.created).toBe(false);
    expect(replaced.crowd.createdAt).toEqual(first.crowd.createdAt);
    expect(replaced.crowd.updatedAt.getTime()).toBeGreaterThanOrEqual(first.crowd.updatedAt.getTime());

    const loaded = await requireCrowd(database(), tenantId, 'vip');
    expect(loaded.bitmap.toArray()).toEqual([7, 8]);
    expect(loaded.count).toBe(2);
    expect((await requireCrowdMeta(database(), tenantId, 'vip')).sizeBytes).toBe(loaded.sizeBytes);
    expect(await loadCrowd(database(), 'tn_someone_else', 'vip')).toBeNull();
    expect((await listCrowds(database(), tenantId)).map((c) => c.name)).toEqual(['vip']);

    await deleteCrowd(database(), tenantId, 'vip');
    await expect(deleteCrowd(database(), tenantId, 'vip')).rejects.toMatchObject({ code: 'not_found' });
    await expect(requireCrowd(database(), tenantId, 'vip')).rejects.toMatchObject({ code: 'not_found', message: 'Crowd "vip" was not found' });
    unsubscribe();
    await saveCrowd(database(), tenantId, 'after', new RoaringBitmap32(), 'create');
    expect(heard).toEqual([
      [tenantId, 'vip', 'saved'],
      [tenantId, 'vip', 'saved'],
      [tenantId, 'vip', 'deleted'],
    ]);
  });

  it('refuses a bad crowd name', async () => {
    await expect(saveCrowd(database(), 'tn_store', 'no spaces', new RoaringBitmap32(), 'create')).rejects.toThrow(/Crowd names/);
  });

  it('finds no crowd under a name no crowd can have (a NUL fails a PostgreSQL query), without an error', async () => {
    expect(await loadCrowd(database(), 'tn_store', 'a\u0000b')).toBeNull();
    await expect(requireCrowdMeta(database(), 'tn_store', 'a\u0000b')).rejects.toMatchObject({ code: 'not_found' });
    await expect(requireCrowd(database(), 'tn_store', 'x'.repeat(5000))).rejects.toMatchObject({ code: 'not_found' });
  });

  it('combines bitmaps: union, intersection, and difference of the first with the rest', async () => {
    const stored: Record<string, number[]> = { a: [1, 2, 3, 4], b: [3, 4, 5], c: [4, 9] };
    const load = async (name: string) => RoaringBitmap32.from(stored[name]);
    const combined = async (op: 'union' | 'intersection' | 'difference', names: string[]) => (await combine(op, names, load)).toArray();
    expect(await combined('union', ['a', 'b', 'c'])).toEqual([1, 2, 3, 4, 5, 9]);
    expect(await combined('intersection', ['a', 'b', 'c'])).toEqual([4]);
    expect(await combined('difference', ['a', 'b', 'c'])).toEqual([1, 2]);
    expect(await combined('difference', ['a'])).toEqual([1, 2, 3, 4]);
    expect(await combined('intersection', ['a'])).toEqual([1, 2, 3, 4]);
    // The first of a difference named again among the rest takes everyone out, as it names itself.
    expect(await combined('difference', ['a', 'b', 'a'])).toEqual([]);
  });

  it('combines stored crowds one at a time, with turns of the event loop between them', async () => {
    const tenantId = await tenantRow('tn_turns');
    const names = ['s0', 's1', 's2', 's3'];
    for (const [i, name] of names.entries()) await saveCrowd(database(), tenantId, name, RoaringBitmap32.from([i, 10 + i]), 'create');
    const turns = loopTurns();
    const { crowd } = await combineCrowds(database(), tenantId, { name: 'all', op: 'union', crowds: names, replace: false });
    turns.stop();
    expect(crowd.count).toBe(8);
    // A turn after each of the four loads and each of the three folds: other requests run between them.
    expect(turns.count).toBeGreaterThanOrEqual(7);
  });

  it('combines stored crowds, may overwrite a source with replace, and names every missing source', async () => {
    const tenantId = await tenantRow('tn_combine');
    await saveCrowd(database(), tenantId, 'a', RoaringBitmap32.from([1, 2, 3]), 'create');
    await saveCrowd(database(), tenantId, 'b', RoaringBitmap32.from([3, 4]), 'create');
    const result = await combineCrowds(database(), tenantId, { name: 'a', op: 'union', crowds: ['a', 'b', 'a'], replace: true });
    expect(result.created).toBe(false);
    expect((await requireCrowd(database(), tenantId, 'a')).bitmap.toArray()).toEqual([1, 2, 3, 4]);
    await expect(combineCrowds(database(), tenantId, { name: 'x', op: 'union', crowds: ['a', 'm1', 'm2'], replace: false })).rejects.toMatchObject({
      code: 'not_found',
      details: { missing: ['m1', 'm2'] },
    });
    expect(await loadCrowd(database(), tenantId, 'x')).toBeNull();
  });
});
