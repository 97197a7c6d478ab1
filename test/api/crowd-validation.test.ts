import { describe, expect, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { api, createTenant, expectError } from '../helpers/api';
import { corruptExamples } from '../helpers/portable-roaring';

const roaring = (body: Uint8Array) => ({ body, headers: { 'content-type': 'application/octet-stream' } });

describe('corrupt portable roaring uploads', () => {
  it('refuses each kind of corrupt file with 400 invalid_bitmap naming the problem, and stores nothing', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/crowds`;
    const kept = RoaringBitmap32.fromRange(0, 50_000);
    kept.runOptimize();
    expect((await api('POST', `${base}/kept`, { token: tenant.key, ...roaring(serializeBitmap(kept)) })).status).toBe(201);
    for (const { kind, bytes, problem } of corruptExamples()) {
      const created = expectError(await api('POST', `${base}/corrupt`, { token: tenant.key, ...roaring(bytes) }), 400, 'invalid_bitmap');
      expect(created.message, kind).toMatch(problem);
      expectError(await api('GET', `${base}/corrupt`, { token: tenant.key }), 404, 'not_found');
      const replaced = expectError(await api('PUT', `${base}/kept`, { token: tenant.key, ...roaring(bytes) }), 400, 'invalid_bitmap');
      expect(replaced.message, kind).toMatch(problem);
    }
    expect((await api('GET', `${base}/kept`, { token: tenant.key })).body.count).toBe(50_000);
    expect((await api('GET', base, { token: tenant.key })).body.crowds.map((c: { name: string }) => c.name)).toEqual(['kept']);
  });

  it('still stores a valid upload of every container kind with its exact count', async () => {
    const tenant = await createTenant();
    const bitmap = RoaringBitmap32.from([5, 100, 200, 300, 4294967295]);
    bitmap.addRange(65536, 65536 + 10_000);
    for (let id = 200_000; id < 300_000; id += 2) bitmap.add(id);
    bitmap.runOptimize();
    const created = await api('POST', `/tenants/${tenant.name}/crowds/mixed`, { token: tenant.key, ...roaring(serializeBitmap(bitmap)) });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.count).toBe(bitmap.size);
  });
});
