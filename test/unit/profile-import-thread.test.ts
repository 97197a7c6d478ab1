// A profile import given to a real engine thread (server/engine/thread.ts behind its client, as the server runs the
// import route): the engine thread parses the body, writes the chunks and applies them to the one profile index; the
// request thread only passes bytes on. Without that, the request thread parsed, wrote and indexed every chunk itself
// (busy nearly all of the import) and kept a second copy of the index.
import { spawn } from 'node:child_process';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineClient } from '../../server/engine/client';
import { newId } from '../../server/ids';
import { IMPORT_CHUNK_LINES } from '../../server/profiles/import';
import { dropProfileIndex, heldProfiles, profileIndex, profileIndexLoad } from '../../server/profiles/index-store';
import { db, database } from '../helpers/app-db';
import { tenantRow } from '../helpers/tenant-row';
import { waitFor } from '../helpers/wait-for';
import { startThreadEngine, type ThreadEngine } from '../fixtures/engine/thread-engine';

/** How busy the request thread may be during the import (the share of time its event loop was not idle). */
const REQUEST_LOOP_UTILIZATION_BOUND = 0.3;
const REQUEST_LOOP_DELAY_BOUND_MS = 1_000;

let engine: EngineClient;
let threaded: ThreadEngine;

beforeAll(async () => {
  threaded = await startThreadEngine();
  engine = threaded.engine;
});

afterAll(() => threaded.stop());

const line = (user: number, attributes: Record<string, unknown>) => `${JSON.stringify({ user, attributes })}\n`;

/** The body in pieces of about 64 KiB, as a socket delivers them (the text is made before the import starts). */
function piecesOf(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, (at += 65_536)));
    },
  });
}

async function storedProfiles(tenantId: string) {
  const rows = await db().profile.findMany({ where: { tenantId }, orderBy: { user: 'asc' } });
  return Object.fromEntries(rows.map((row) => [Number(row.user), JSON.parse(row.attributes)]));
}

describe('a profile import in the engine thread', () => {
  it('leaves the request thread free and without a copy of the index, and the engine index agrees with the rows', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const users = 100_000;
    let text = '';
    for (let user = 0; user < users; user++) text += line(user, { plan: user % 4 ? 'free' : 'pro', age: 18 + (user % 60) });
    const body = piecesOf(text);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    const before = performance.eventLoopUtilization();
    delay.enable();
    const result = await engine.profiles.importProfiles(tenantId, body, 'ndjson');
    delay.disable();
    const utilization = performance.eventLoopUtilization(before).utilization;
    console.log(`[import in the engine thread] request loop utilization ${utilization.toFixed(3)}, max delay ${(delay.max / 1e6).toFixed(0)} ms`);

    expect(result).toMatchObject({ lines: users, users, created: users, chunks: users / IMPORT_CHUNK_LINES });
    expect(heldProfiles(database(), tenantId)).toBeUndefined(); // this thread never loaded nor applied an index
    expect(await db().profile.count({ where: { tenantId } })).toBe(users);
    const fields = await engine.profiles.profileFields(tenantId);
    expect(fields.profiles).toBe(users);
    expect(fields.fields.find((field) => field.path === 'plan')?.topValues).toEqual([
      { value: 'free', users: (users * 3) / 4 },
      { value: 'pro', users: users / 4 },
    ]);
    const audience = await engine.profiles.estimateAudience(tenantId, { condition: 'profile.plan == "pro" && profile.age >= 70', sample: 3 });
    const expected = Array.from({ length: users }, (_, user) => user).filter((user) => user % 4 === 0 && 18 + (user % 60) >= 70);
    expect(audience).toMatchObject({ count: expected.length, sample: expected.slice(0, 3), mode: 'plan', exact: true });
    expect(utilization).toBeLessThan(REQUEST_LOOP_UTILIZATION_BOUND);
    expect(delay.max / 1e6).toBeLessThan(REQUEST_LOOP_DELAY_BOUND_MS);
  });

  it('refuses a bad line by number after whole committed chunks, and stops reading the body there', async () => {
    const tenantId = await tenantRow(newId('tn'));
    let text = '';
    for (let user = 0; user < IMPORT_CHUNK_LINES + 5; user++) text += line(user, { n: user });
    text += '{"user": "seven"}\n';
    for (let user = 0; user < 200_000; user++) text += line(user, { n: -1 }); // never committed
    const refused = await engine.profiles.importProfiles(tenantId, piecesOf(text), 'ndjson').catch((error: unknown) => error);
    expect(refused).toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining(`line ${IMPORT_CHUNK_LINES + 6}`),
      details: expect.objectContaining({ line: IMPORT_CHUNK_LINES + 6, committedLines: IMPORT_CHUNK_LINES, committedChunks: 1 }),
    });
    expect(await db().profile.count({ where: { tenantId } })).toBe(IMPORT_CHUNK_LINES);
    expect((await engine.profiles.profileFields(tenantId)).profiles).toBe(IMPORT_CHUNK_LINES);
  });

  it('takes turns with upserts of the same tenant: a merge during the import is never lost', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const users = 30_000;
    let text = '';
    for (let user = 0; user < users; user++) text += line(user, { n: user });
    const importing = engine.profiles.importProfiles(tenantId, piecesOf(text), 'ndjson');
    const vips = [3, 12_345, 29_999];
    for (const user of vips) await engine.profiles.upsertProfiles(tenantId, [{ user, attributes: { vip: true } }]);
    await importing;
    const stored = await storedProfiles(tenantId);
    for (const user of vips) expect(stored[user]).toEqual({ n: user, vip: true });
    const audience = await engine.profiles.estimateAudience(tenantId, { condition: 'profile.vip == true && has(profile.n)', sample: 10 });
    expect(audience).toMatchObject({ count: vips.length, sample: vips, mode: 'plan' });
    expect((await engine.profiles.profileFields(tenantId)).profiles).toBe(users);
  });

  it('a process SIGKILLed mid-import leaves whole chunks, and the next load rebuilds an index that agrees with them', async () => {
    const tenantId = await tenantRow(newId('tn'));
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/profiles/import-thread-child.ts'], {
      env: { ...process.env, IMPORT_TENANT: tenantId },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let ended = false;
    child.once('exit', () => (ended = true));
    // Killed once two chunks are committed (the rows are counted here: the child's engine thread writes them).
    await waitFor(
      'two committed chunks',
      async () => {
        if (ended) throw new Error(`import child ended early:\n${output}`);
        return (await db().profile.count({ where: { tenantId } })) >= 2 * IMPORT_CHUNK_LINES;
      },
      Boolean,
      { timeoutMs: 50_000, everyMs: 20 },
    );
    child.kill('SIGKILL');
    await exited;
    const rows = await db().profile.count({ where: { tenantId } });
    expect(rows).toBeGreaterThanOrEqual(2 * IMPORT_CHUNK_LINES);
    expect(rows % IMPORT_CHUNK_LINES).toBe(0);
    dropProfileIndex(database(), tenantId);
    const index = await profileIndex(database(), tenantId);
    expect(Object.fromEntries(index.materialize(index.users))).toEqual(await storedProfiles(tenantId));
    expect(profileIndexLoad(database(), tenantId)?.source).toBe('rows');
  });
});
