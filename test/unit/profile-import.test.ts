import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { newId } from '../../server/ids';
import { IMPORT_CHUNK_LINES, importProfiles } from '../../server/profiles/import';
import { dropProfileIndex, profileIndex, profileIndexLoad } from '../../server/profiles/index-store';
import { upsertProfiles } from '../../server/profiles/profiles';
import { db, database } from '../helpers/app-db';
import { tenantRow } from '../helpers/tenant-row';

/** In uneven pieces, so lines and multi-byte characters are split across reads. */
function stream(text: string, piece = 7): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  return new ReadableStream({
    start(controller) {
      for (let at = 0; at < bytes.length; at += piece) controller.enqueue(bytes.subarray(at, at + piece));
      controller.close();
    },
  });
}

async function storedProfiles(tenantId: string) {
  const rows = await db().profile.findMany({ where: { tenantId }, orderBy: { user: 'asc' } });
  return Object.fromEntries(rows.map((row) => [Number(row.user), JSON.parse(row.attributes)]));
}

async function indexedProfiles(tenantId: string) {
  const index = await profileIndex(database(), tenantId);
  return Object.fromEntries(index.materialize(index.users));
}

describe('profile import', () => {
  it('merges NDJSON lines into stored profiles as the upsert route does, and the index follows', async () => {
    const tenantId = await tenantRow(newId('tn'));
    await upsertProfiles(database(), tenantId, [{ user: 1, attributes: { plan: 'free', keep: true } }]);
    const result = await importProfiles(
      database(),
      tenantId,
      stream(
        [
          '{"user": 1, "attributes": {"plan": "pro", "city": "Zürich"}}',
          '',
          '{"user": 2, "attributes": {"age": 30, "x": null}}',
          '{"user": 1, "attributes": {"keep": null}}\r',
        ].join('\n'),
      ),
      'ndjson',
    );
    expect(result).toMatchObject({ lines: 3, users: 2, created: 1, chunks: 1 });
    expect(await storedProfiles(tenantId)).toEqual({ 1: { plan: 'pro', city: 'Zürich' }, 2: { age: 30 } });
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));
  });

  it('reads CSV with a header: inferred or declared types, empty cells absent, quotes, nested columns', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const csv = [
      'user,plan,age,optIn,zip,address.country,note',
      '1,pro,30,true,01234,NL,"a, ""quoted"" note"',
      '2,free,,false,75001,,',
      '3,"trial",41.5,,,BE,plain',
    ].join('\n');
    const result = await importProfiles(database(), tenantId, stream(csv), 'csv', 'zip:string');
    expect(result).toMatchObject({ lines: 3, users: 3, created: 3 });
    expect(await storedProfiles(tenantId)).toEqual({
      1: { plan: 'pro', age: 30, optIn: true, zip: '01234', address: { country: 'NL' }, note: 'a, "quoted" note' },
      2: { plan: 'free', optIn: false, zip: '75001' },
      3: { plan: 'trial', age: 41.5, address: { country: 'BE' }, note: 'plain' },
    });
    expect((await profileIndex(database(), tenantId)).compare('age', '>', 35).toArray()).toEqual([3]);
  });

  it.each([
    ['ndjson', '{"user": 1, "attributes": {}}\n{"user": -1, "attributes": {}}', 'line 2: "user" must be an integer'],
    ['ndjson', '{"user": 1, "attributes": {}}\n\n{"user": 2, "attributes": {}', 'line 3: not JSON'],
    ['ndjson', '{"user": 1, "attrs": {}}', 'line 1: unknown key "attrs"'],
    ['ndjson', '{"user": 1, "attributes": [1]}', 'line 1: "attributes" must be an object'],
    ['csv', 'plan,age\npro,3', 'line 1: the header has no "user" column'],
    ['csv', 'user,plan\n1,pro\n2,pro,extra', 'line 3: 3 fields, the header has 2'],
    ['csv', 'user,plan\n1,"pro', 'line 2: a quoted field is not closed'],
    ['csv', 'user,age\n1,abc', 'line 2: column "age" must be a number'],
  ])('%s: a bad line is refused by number, and its chunk is not written: %s', async (format, body, message) => {
    const tenantId = await tenantRow(newId('tn'));
    await expect(
      importProfiles(database(), tenantId, stream(body), format as 'ndjson' | 'csv', format === 'csv' && body.includes('abc') ? 'age:number' : null),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining(message),
      details: expect.objectContaining({ committedLines: 0 }),
    });
    expect(await db().profile.count({ where: { tenantId } })).toBe(0);
    expect(await indexedProfiles(tenantId)).toEqual({});
  });

  it('commits in chunks: a bad line after the first chunk leaves exactly the first chunk, data and index agreeing', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const lines = Array.from({ length: IMPORT_CHUNK_LINES + 5 }, (_, user) => JSON.stringify({ user, attributes: { n: user } }));
    lines.push('{"user": "seven"}');
    await expect(importProfiles(database(), tenantId, stream(lines.join('\n'), 65_537), 'ndjson')).rejects.toMatchObject({
      details: expect.objectContaining({ line: IMPORT_CHUNK_LINES + 6, committedLines: IMPORT_CHUNK_LINES }),
    });
    expect(await db().profile.count({ where: { tenantId } })).toBe(IMPORT_CHUNK_LINES);
    expect((await profileIndex(database(), tenantId)).size).toBe(IMPORT_CHUNK_LINES);
  });

  it('a process SIGKILLed mid-import leaves whole chunks, and the next load rebuilds an index that agrees with them', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/profiles/import-child.ts'], {
      env: { ...process.env, IMPORT_TENANT: tenantId },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        output += d;
        if (/COMMITTED 2/.test(output)) resolve();
      });
      child.once('exit', () => reject(new Error(`import child ended early:\n${output}`)));
    });
    child.kill('SIGKILL');
    await exited;
    const rows = await db().profile.count({ where: { tenantId } });
    expect(rows).toBeGreaterThanOrEqual(2 * IMPORT_CHUNK_LINES);
    expect(rows % IMPORT_CHUNK_LINES).toBe(0);
    dropProfileIndex(database(), tenantId);
    expect(await indexedProfiles(tenantId)).toEqual(await storedProfiles(tenantId));
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
    expect((await profileIndex(database(), tenantId)).equals('plan', 'pro').size).toBe(Math.ceil(rows / 3));
  });
});
