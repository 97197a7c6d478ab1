import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { appendEvents, ingest } from '../../server/engine/ingest';
import { appendRequest } from '../../server/engine/ingest-commit';
import { DEDUPE_WINDOW_MS } from '../../server/engine/ingest-dedupe';
import { decodeEvents } from '../../server/engine/log-codec';
import { newId } from '../../server/ids';
import { app } from '../../server/app';
import { db, database } from '../helpers/app-db';

const NOW = Date.UTC(2026, 0, 1, 12);
const HOUR = 3_600_000;

async function tenant(partitions = 2) {
  const id = newId('tn');
  const row = await db().tenant.create({ data: { id, name: id.toLowerCase().replace(/[^a-z0-9]/g, 'x'), partitions } });
  return { ...row, principal: { kind: 'tenant' as const, tenantId: id, keyId: 'k' } };
}

async function loggedUsers(tenantId: string): Promise<number[]> {
  const rows = await db().eventLog.findMany({ where: { tenantId }, orderBy: [{ partition: 'asc' }, { offset: 'asc' }] });
  return rows.flatMap((r) => decodeEvents(r.events).map((e) => e.user)).sort((a, b) => a - b);
}

/** What a restarted process knows: nothing in memory, only the IngestRecord table. */
function forgetInMemory(): void {
  app().state.ingestDedupe.clear();
}

const batch = (users: number[], idPrefix?: string) => ({
  events: users.map((user) => ({ user, type: 'x', ...(idPrefix ? { id: `${idPrefix}-${user}` } : {}) })),
});

describe('Idempotency-Key', () => {
  it('answers a retry as the first time without appending, also after a restart; another body under the key is refused', async () => {
    const t = await tenant();
    const first = await ingest(database(), app().state, t.principal, batch([1, 2, 3]), NOW, 'key-1');
    expect(first).toMatchObject({ accepted: 3, duplicates: 0, replayed: false });
    expect(await ingest(database(), app().state, t.principal, batch([1, 2, 3]), NOW + 1000, 'key-1')).toMatchObject({
      accepted: 3,
      duplicates: 0,
      replayed: true,
    });
    forgetInMemory();
    expect(await ingest(database(), app().state, t.principal, batch([1, 2, 3]), NOW + 2000, 'key-1')).toMatchObject({ accepted: 3, replayed: true });
    await expect(ingest(database(), app().state, t.principal, batch([1, 2, 4]), NOW + 3000, 'key-1')).rejects.toMatchObject({
      code: 'idempotency_key_reused',
      status: 422,
      message: expect.stringMatching(/^Idempotency-Key "key-1" was already used for a different request body within the last 24 hours/),
    });
    expect(await ingest(database(), app().state, t.principal, batch([1, 2, 4]), NOW + 3000, 'key-2')).toMatchObject({ accepted: 3, replayed: false });
    expect(await loggedUsers(t.id)).toEqual([1, 1, 2, 2, 3, 4]);
  });

  it('settles concurrent requests with one key in one group commit: one appends, the others are its replays', async () => {
    const t = await tenant();
    const results = await Promise.all(Array.from({ length: 6 }, () => ingest(database(), app().state, t.principal, batch([7, 8]), NOW, 'same')));
    expect(results.filter((r) => !r.replayed)).toHaveLength(1);
    expect(results.every((r) => r.accepted === 2)).toBe(true);
    expect(await loggedUsers(t.id)).toEqual([7, 8]);
  });

  it('remembers a key for the 24-hour window, then forgets it: the same key appends again', async () => {
    const t = await tenant();
    await ingest(database(), app().state, t.principal, batch([5]), NOW, 'daily');
    expect((await ingest(database(), app().state, t.principal, batch([5]), NOW + DEDUPE_WINDOW_MS - HOUR, 'daily')).replayed).toBe(true);
    expect((await ingest(database(), app().state, t.principal, batch([5]), NOW + DEDUPE_WINDOW_MS + HOUR, 'daily')).replayed).toBe(false);
    expect(await loggedUsers(t.id)).toEqual([5, 5]);
    // The expired row was the newest: it stays without its key (seqs continue from it).
    const records = await db().ingestRecord.findMany({ where: { tenantId: t.id }, orderBy: { seq: 'asc' } });
    expect(records.map((r) => [Number(r.seq), r.key])).toEqual([
      [1, null],
      [2, 'daily'],
    ]);
    await ingest(database(), app().state, t.principal, batch([6]), NOW + 2 * DEDUPE_WINDOW_MS + 2 * HOUR, 'later');
    expect((await db().ingestRecord.findMany({ where: { tenantId: t.id }, orderBy: { seq: 'asc' } })).map((r) => [Number(r.seq), r.key])).toEqual([
      [2, null],
      [3, 'later'],
    ]);
  });
});

describe('event ids', () => {
  it('appends an id once: repeats in later requests, in the same request and after a restart are counted as duplicates', async () => {
    const t = await tenant(3);
    expect(await ingest(database(), app().state, t.principal, batch([1, 2, 3], 'e'), NOW)).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(await ingest(database(), app().state, t.principal, batch([2, 3, 4], 'e'), NOW)).toMatchObject({ accepted: 3, duplicates: 2 });
    const sameTwice = {
      events: [
        { id: 'dup', user: 10, type: 'x' },
        { id: 'dup', user: 11, type: 'x' },
        { user: 12, type: 'no id' },
        { user: 12, type: 'no id' },
      ],
    };
    expect(await ingest(database(), app().state, t.principal, sameTwice, NOW)).toMatchObject({ accepted: 4, duplicates: 1 });
    forgetInMemory();
    expect(await ingest(database(), app().state, t.principal, batch([1, 4, 5], 'e'), NOW)).toMatchObject({ accepted: 3, duplicates: 2 });
    expect(await loggedUsers(t.id)).toEqual([1, 2, 3, 4, 5, 10, 12, 12]);
  });

  it('concurrent requests with overlapping ids append each id once', async () => {
    const t = await tenant(4);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => ingest(database(), app().state, t.principal, batch([i, i + 1, i + 2], 'c'), NOW)));
    expect(results.reduce((n, r) => n + r.accepted - r.duplicates, 0)).toBe(12);
    expect(await loggedUsers(t.id)).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });
});

describe('group commit isolation', () => {
  it('a batch that cannot be stored fails alone; the batches committed in the same group are acknowledged', async () => {
    const t = await tenant(4);
    let nested: Record<string, unknown> = { leaf: true };
    for (let depth = 0; depth < 200_000; depth++) nested = { a: nested }; // JSON.stringify overflows the stack
    const good = Array.from({ length: 20 }, (_, i) => appendEvents(database(), app().state, t.id, [{ user: i, type: 'ok', data: {}, time: NOW }]));
    const bad = appendEvents(database(), app().state, t.id, [{ user: 99, type: 'deep', data: nested, time: NOW }]);
    const more = Array.from({ length: 20 }, (_, i) => appendEvents(database(), app().state, t.id, [{ user: 100 + i, type: 'ok', data: {}, time: NOW }]));
    await expect(bad).rejects.toMatchObject({ code: 'validation_failed', status: 400, message: expect.stringMatching(/^events: the batch cannot be stored/) });
    expect(await Promise.all([...good, ...more])).toEqual(Array(40).fill(1));
    expect(await loggedUsers(t.id)).toEqual([...Array.from({ length: 20 }, (_, i) => i), ...Array.from({ length: 20 }, (_, i) => 100 + i)]);
  });

  it('the ids of a batch refused in a group do not count as logged for the batches after it', async () => {
    const t = await tenant(2);
    let nested: Record<string, unknown> = { leaf: true };
    for (let depth = 0; depth < 200_000; depth++) nested = { a: nested };
    const first = appendRequest(database(), app().state, t, { events: [{ user: 1, type: 'ok', data: {}, time: NOW }] }, NOW); // holds the writer: the next two share a group
    const bad = appendRequest(database(), app().state, t, { events: [{ user: 2, type: 'deep', data: nested, time: NOW }], ids: ['same-id'] }, NOW);
    const retry = appendRequest(database(), app().state, t, { events: [{ user: 2, type: 'ok', data: {}, time: NOW }], ids: ['same-id'] }, NOW);
    await expect(bad).rejects.toMatchObject({ code: 'validation_failed' });
    expect(await retry).toMatchObject({ accepted: 1, duplicates: 0 });
    await first;
    expect(await loggedUsers(t.id)).toEqual([1, 2]);
  });
});

describe('several processes deduplicating one tenant', () => {
  it('appends each event id once when three processes send overlapping ids at the same time', async () => {
    const t = await tenant(2);
    const ingestModule = new URL('../../server/engine/ingest.ts', import.meta.url).href;
    // Each writer sends ids 0..59 in its own order, so every id is raced by all three; only the database arbitrates.
    const writer = (id: number) => `
      const { ingest } = await import(${JSON.stringify(ingestModule)});
      const { registerApp } = await import(${JSON.stringify(new URL('../../server/app.ts', import.meta.url).href)});
      const { createApp } = await import(${JSON.stringify(new URL('../../server/create-app.ts', import.meta.url).href)});
      const built = createApp();
      registerApp(built);
      const principal = { kind: 'tenant', tenantId: ${JSON.stringify(t.id)}, keyId: 'k' };
      for (let b = 0; b < 20; b++) {
        const users = [0, 1, 2].map((i) => (b * 3 + i + ${id} * 21) % 60);
        await ingest(built.database, built.state, principal, { events: users.map((user) => ({ id: 'e' + user, user, type: 'w${id}' })) }, Date.now());
      }
      await built.close();`;
    const run = (id: number) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', writer(id)], {
          env: process.env,
          stdio: ['ignore', 'inherit', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer ${id} exited ${code}: ${stderr}`))));
      });
    await Promise.all([run(0), run(1), run(2)]);
    expect(await loggedUsers(t.id)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  }, 120_000);
});
