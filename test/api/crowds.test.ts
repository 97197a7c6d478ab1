import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { describe, expect, inject, it } from 'vitest';
import { RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { api, baseUrl, createTenant, expectError, uniqueName } from '../helpers/api';
import { waitFor } from '../helpers/wait-for';

const text = (body: string, type = 'text/plain') => ({ body, headers: { 'content-type': type } });

async function download(path: string, token?: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(`${baseUrl()}/api/v1${path}`, {
    headers: { authorization: `Bearer ${token ?? inject('adminToken')}` },
  });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** Sends only the headers of a request that claims a huge body, to see it refused before the body is read. */
function declareHugeUpload(path: string, contentLength: number): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${baseUrl()}/api/v1${path}`);
    const request = httpRequest(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${inject('adminToken')}`, 'content-type': 'text/plain', 'content-length': String(contentLength) },
    });
    request.on('response', (response) => {
      let data = '';
      response.on('data', (chunk) => (data += chunk));
      response.on('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(data) });
      });
    });
    request.on('error', reject);
    request.write('1\n2\n3\n');
  });
}

describe('crowds API', () => {
  it('uploads text, lists, gets, exports in every format, replaces and deletes a crowd', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/crowds`;
    const created = await api('POST', `${base}/vip`, { token: tenant.key, ...text('user_id\r\n7\r\n3\r\n7\r\n4294967295\r\n0\r\n', 'text/csv') });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ name: 'vip', count: 4 });
    expect(created.body.sizeBytes).toBeGreaterThan(0);

    const list = await api('GET', base, { token: tenant.key });
    expect(list.body.crowds).toEqual([created.body]);
    expect((await api('GET', `${base}/vip`, { token: tenant.key })).body).toEqual(created.body);

    const csv = await download(`${base}/vip/export?format=csv`, tenant.key);
    expect(csv.headers.get('content-type')).toMatch(/text\/csv/);
    expect(csv.headers.get('content-disposition')).toBe('attachment; filename="vip.csv"');
    expect(csv.bytes.toString()).toBe('0\n3\n7\n4294967295\n');
    const roaring = await download(`${base}/vip/export?format=roaring`, tenant.key);
    expect(roaring.headers.get('content-type')).toBe('application/octet-stream');
    expect(RoaringBitmap32.deserialize(roaring.bytes, 'portable').toArray()).toEqual([0, 3, 7, 4294967295]);
    expect(JSON.parse((await download(`${base}/vip/export?format=json&limit=2`, tenant.key)).bytes.toString())).toEqual([0, 3]);
    expect((await download(`${base}/vip/export`, tenant.key)).bytes.toString()).toBe('0\n3\n7\n4294967295\n');

    const replaced = await api('PUT', `${base}/vip`, { token: tenant.key, ...text('[10, 11, 12]', 'application/json') });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ name: 'vip', count: 3, createdAt: created.body.createdAt });
    const fresh = await api('PUT', `${base}/from-roaring`, {
      token: tenant.key,
      body: new Uint8Array(serializeBitmap(RoaringBitmap32.fromRange(100, 200))),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(fresh.status).toBe(201);
    expect(fresh.body.count).toBe(100);
    expect((await api('GET', base, { token: tenant.key })).body.crowds.map((c: { name: string }) => c.name)).toEqual(['from-roaring', 'vip']);

    expect((await api('DELETE', `${base}/vip`, { token: tenant.key })).status).toBe(204);
    expectError(await api('GET', `${base}/vip`, { token: tenant.key }), 404, 'not_found');
    expectError(await api('DELETE', `${base}/vip`, { token: tenant.key }), 404, 'not_found');
  });

  it('uploads the studio sample crowd file', async () => {
    const tenant = await createTenant();
    const sample = readFileSync('public/samples/crowd-1000.csv', 'utf8');
    const uploaded = await api('POST', `/tenants/${tenant.name}/crowds/sample`, text(sample, 'text/csv'));
    expect(uploaded.status).toBe(201);
    expect(uploaded.body.count).toBe(1000);
  });

  it('refuses a 0-byte upload of every type (400 empty_upload) and stores an empty crowd sent as an empty value', async () => {
    const tenant = await createTenant();
    for (const type of ['text/plain', 'text/csv', 'application/json', 'application/octet-stream']) {
      expect(expectError(await api('PUT', `/tenants/${tenant.name}/crowds/nobody`, text('', type)), 400, 'empty_upload').message).toMatch(/0 bytes/);
    }
    expect((await api('GET', `/tenants/${tenant.name}/crowds/nobody`)).status).toBe(404);
    const empty = await api('POST', `/tenants/${tenant.name}/crowds/nobody`, text('\n'));
    expect(empty.status).toBe(201);
    expect(empty.body.count).toBe(0);
    expect((await download(`/tenants/${tenant.name}/crowds/nobody/export`)).bytes.length).toBe(0);
    expect((await api('PUT', `/tenants/${tenant.name}/crowds/nobody`, text('[]', 'application/json'))).body.count).toBe(0);
  });

  it('refuses bad uploads with a 4xx naming the problem and stores nothing', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/crowds`;
    const bad = expectError(await api('POST', `${base}/bad`, text('1\n2\n-3\n')), 400, 'invalid_id');
    expect(bad.message).toMatch(/Line 3/);
    expect(bad.message).toContain('"-3"');
    expect(bad.details).toEqual({ path: 'line 3', line: 3, value: '-3' });
    expect(expectError(await api('POST', `${base}/bad`, text('5\n4294967296')), 400, 'invalid_id').message).toMatch(/Line 2: "4294967296" is above 4294967295/);
    expect(expectError(await api('POST', `${base}/bad`, text('[1, 2.5]', 'application/json')), 400, 'invalid_id').message).toMatch(
      /Element \[1\] \(line 1\): 2.5 is not an integer/,
    );
    expectError(await api('POST', `${base}/bad`, text('[1, 2', 'application/json')), 400, 'invalid_json');
    expect(expectError(await api('POST', `${base}/bad`, text('1\n2', 'text/html')), 415, 'unsupported_media_type').message).toMatch(/text\/html/);
    expectError(await api('POST', `${base}/bad`, { body: new Uint8Array([49, 10]) }), 415, 'unsupported_media_type');
    const full = serializeBitmap(RoaringBitmap32.fromRange(0, 100_000));
    const truncated = new Uint8Array(full.subarray(0, full.length - 10));
    expectError(await api('POST', `${base}/bad`, { body: truncated, headers: { 'content-type': 'application/octet-stream' } }), 400, 'invalid_bitmap');
    const huge = await declareHugeUpload(`${base}/bad`, 2 * 1024 ** 3);
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
    expect(expectError(await api('POST', `${base}/has%20space`, text('1')), 400, 'validation_failed').message).toMatch(/name/);
    expectError(await api('POST', `${base}/${'x'.repeat(101)}`, text('1')), 400, 'validation_failed');
    expect((await api('GET', base)).body.crowds).toEqual([]);
  });

  it('refuses a duplicate name with 409 and keeps the crowd when a replace fails', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/crowds`;
    expect((await api('POST', `${base}/dup`, text('1,2,3'))).status).toBe(201);
    expect(expectError(await api('POST', `${base}/dup`, text('4')), 409, 'conflict').message).toMatch(/"dup" already exists; use PUT/);
    expectError(await api('PUT', `${base}/dup`, text('4\nfive')), 400, 'invalid_id');
    expectError(
      await api('PUT', `${base}/dup`, { body: new Uint8Array([1, 2, 3]), headers: { 'content-type': 'application/octet-stream' } }),
      400,
      'invalid_bitmap',
    );
    expect((await api('GET', `${base}/dup`)).body.count).toBe(3);
    expect((await download(`${base}/dup/export`)).bytes.toString()).toBe('1\n2\n3\n');
  });

  it('answers 404 for missing crowds and 400 for a bad export query', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}/crowds`;
    expect(expectError(await api('GET', `${base}/ghost`), 404, 'not_found').message).toContain('"ghost"');
    expectError(await api('GET', `${base}/ghost/export`), 404, 'not_found');
    await api('POST', `${base}/real`, text('1'));
    expect(expectError(await api('GET', `${base}/real/export?format=xml`), 400, 'validation_failed').message).toMatch(/format/);
    expect(expectError(await api('GET', `${base}/real/export?limit=-1`), 400, 'validation_failed').message).toMatch(/limit/);
    expectError(await api('GET', `/tenants/no-such-tenant/crowds`), 404, 'not_found');
  });

  it('combines crowds by union, intersection and difference into a new crowd', async () => {
    const tenant = await createTenant();
    const base = `/tenants/${tenant.name}`;
    await api('POST', `${base}/crowds/a`, text('1 2 3 4'));
    await api('POST', `${base}/crowds/b`, text('3 4 5'));
    await api('POST', `${base}/crowds/c`, text('4'));
    const combine = (body: unknown) => api('POST', `${base}/combine-crowds`, { token: tenant.key, body });
    const ids = async (name: string) => (await download(`${base}/crowds/${name}/export?format=json`, tenant.key)).bytes.toString();

    const union = await combine({ name: 'a-or-b', op: 'union', crowds: ['a', 'b'] });
    expect(union.status).toBe(201);
    expect(union.body).toMatchObject({ name: 'a-or-b', count: 5 });
    expect(await ids('a-or-b')).toBe('[1,2,3,4,5]\n');
    expect((await combine({ name: 'a-and-b', op: 'intersection', crowds: ['a', 'b'] })).body.count).toBe(2);
    expect(await ids('a-and-b')).toBe('[3,4]\n');
    expect((await combine({ name: 'a-not-bc', op: 'difference', crowds: ['a', 'b', 'c'] })).body.count).toBe(2);
    expect(await ids('a-not-bc')).toBe('[1,2]\n');

    const missing = expectError(await combine({ name: 'x', op: 'union', crowds: ['a', 'nope', 'gone'] }), 404, 'not_found');
    expect(missing.message).toContain('"nope", "gone"');
    expect(expectError(await combine({ name: 'a-or-b', op: 'union', crowds: ['c'] }), 409, 'conflict').message).toMatch(
      /"a-or-b" already exists; set "replace": true/,
    );
    const replaced = await combine({ name: 'a-or-b', op: 'union', crowds: ['c'], replace: true });
    expect(replaced.status).toBe(200);
    expect(replaced.body.count).toBe(1);
    expect(expectError(await combine({ name: 'y', op: 'xor', crowds: ['a'] }), 400, 'validation_failed').message).toMatch(/op/);
    expect(expectError(await combine({ name: 'y', op: 'union', crowds: [] }), 400, 'validation_failed').message).toMatch(/crowds/);
    expectError(await api('POST', `${base}/combine-crowds`, { body: 'name=y', headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expect((await api('GET', `${base}/crowds/x`)).status).toBe(404);
  });

  it('isolates tenants: a key of A gets 404 for the crowds of B', async () => {
    const a = await createTenant();
    const b = await createTenant();
    const name = uniqueName('secret');
    expect((await api('POST', `/tenants/${b.name}/crowds/${name}`, text('42'))).status).toBe(201);
    const other = `/tenants/${b.name}`;
    expectError(await api('GET', `${other}/crowds`, { token: a.key }), 404, 'not_found');
    expectError(await api('GET', `${other}/crowds/${name}`, { token: a.key }), 404, 'not_found');
    expectError(await api('GET', `${other}/crowds/${name}/export`, { token: a.key }), 404, 'not_found');
    expectError(await api('DELETE', `${other}/crowds/${name}`, { token: a.key }), 404, 'not_found');
    expectError(await api('PUT', `${other}/crowds/${name}`, { token: a.key, ...text('1') }), 404, 'not_found');
    expectError(await api('POST', `${other}/combine-crowds`, { token: a.key, body: { name: 'x', op: 'union', crowds: [name] } }), 404, 'not_found');
    expectError(await api('GET', `/tenants/${a.name}/crowds/${name}`, { token: a.key }), 404, 'not_found');
    expect((await api('GET', `${other}/crowds/${name}`)).body.count).toBe(1);
    expectError(await api('GET', `${other}/crowds`, { token: null }), 401, 'unauthorized');
  });
});

describe('crowds seen by running instances', () => {
  it('an inCrowd condition sees a crowd replaced over the API while the instance runs', async () => {
    const tenant = await createTenant(2);
    const base = `/tenants/${tenant.name}`;
    expect((await api('PUT', `${base}/crowds/everyone`, text('1\n2\n'))).status).toBe(201);
    expect((await api('PUT', `${base}/crowds/vip`, text('2\n'))).status).toBe(201);
    const definition = {
      steps: [
        {
          name: 'entry',
          kind: 'branch',
          branches: [
            { condition: 'inCrowd("vip")', next: 'vip' },
            { condition: 'event.type == "other"', next: 'rest' },
          ],
        },
        { name: 'vip', kind: 'direct' },
        { name: 'rest', kind: 'direct' },
      ],
    };
    const workflow = await api('POST', `${base}/workflows`, { body: { name: uniqueName('vip'), definition } });
    const started = await api('POST', `${base}/workflows/${workflow.body.id}/start`, { body: { crowd: 'everyone' } });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect((await api('GET', `/procedures/${started.body.procedureId}?wait=30`)).body.state).toBe('done');
    const countsAfter = async (events: { user: number; type: string }[], expected: Record<string, number>) => {
      expect((await api('POST', '/events', { token: tenant.key, body: { events } })).status).toBe(202);
      const steps = async (): Promise<Record<string, number>> => (await api('GET', `${base}/instances/${started.body.instanceId}/counts`)).body.steps;
      const reached = (read: Record<string, number>) => Object.entries(expected).every(([step, count]) => read[step] === count);
      expect(await waitFor(`counts ${JSON.stringify(expected)}`, steps, reached)).toMatchObject(expected);
    };
    await countsAfter([{ user: 2, type: 'visit' }], { entry: 1, vip: 1 });
    // User 1 joins the vip crowd through the API; the engine must not keep deciding on its cached copy.
    expect((await api('PUT', `${base}/crowds/vip`, text('1\n2\n'))).status).toBe(200);
    await countsAfter([{ user: 1, type: 'visit' }], { entry: 0, vip: 2 });
  });
});
