// Issue 13: whatever a tenant sends, the thread that answers requests keeps answering. Each input of the issue's
// first table is given to a real engine thread (server/engine/thread.ts behind its client, as the server runs it), and
// `monitorEventLoopDelay` measures how long the request thread's event loop was ever held up while the engine worked
// on it. Before the engine had a thread of its own (and before conditions had a bounded cost), these inputs blocked
// every request for 0.7 to 15 s.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { parseCrowdUpload } from '../../server/crowd/parse';
import { saveCrowd } from '../../server/crowd/store';
import type { EngineClient } from '../../server/engine/client';
import { listDeadLetters } from '../../server/engine/dead-letter';
import { AppError } from '../../server/errors';
import { newId } from '../../server/ids';
import type { ProcedureRunner } from '../../server/procedures/types';
import { importProfiles } from '../../server/profiles/import';
import { db, database } from '../helpers/app-db';
import { tenantRow } from '../helpers/tenant-row';
import { startThreadEngine, type ThreadEngine } from '../fixtures/engine/thread-engine';
import { waitFor } from '../helpers/wait-for';

/**
 * The documented bound on how long the request thread's event loop may be held up while the engine thread works on
 * any of these inputs. Measured at machine load 25-30 on 2 cores: 31-193 ms on PostgreSQL, 35-791 ms on SQLite (the
 * 1M-user timer rows; at that load a thread is descheduled for hundreds of ms by itself). Generous for a loaded CI
 * machine, and still far below what these inputs cost before the engine had its own thread.
 */
const REQUEST_LOOP_BOUND_MS = 1_000;
const PARTITIONS = 4;

let runner: ProcedureRunner;
let engine: EngineClient;
let threaded: ThreadEngine;
let tenantId: string;

beforeAll(async () => {
  tenantId = await tenantRow(newId('tn'), PARTITIONS);
  threaded = await startThreadEngine();
  ({ engine, runner } = threaded);
});

afterAll(() => threaded.stop());

/** The longest the request thread's event loop was held up while `work` ran (ms). */
async function requestLoopDelayWhile(work: () => Promise<unknown>): Promise<number> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  try {
    await work();
  } finally {
    delay.disable();
  }
  return delay.max / 1e6;
}

async function startInstance(definition: object, crowd: string): Promise<string> {
  const workflowId = newId('wf');
  // Stored as written, without the save-time checks: the engine must bound what an older version let through.
  await db().workflow.create({ data: { id: workflowId, tenantId, name: workflowId, currentVersion: 1, draft: '{}' } });
  await db().workflowVersion.create({ data: { tenantId, workflowId, version: 1, definition: JSON.stringify(definition) } });
  const { procedureId, instanceId } = await engine.startInstance(tenantId, workflowId, { crowd });
  const done = await runner.await(procedureId, 120_000);
  if (done.state !== 'done') throw new Error(`start ended ${done.state}: ${done.error}`);
  return instanceId;
}

const until = <T>(what: string, read: () => Promise<T>, done: (value: T) => boolean) => waitFor(what, read, done, { timeoutMs: 60_000, everyMs: 20 });

const countsUntil = (instanceId: string, done: (steps: Record<string, number>) => boolean) =>
  until('counts', async () => (await engine.getCounts(tenantId, instanceId)).steps, done);

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe(`the request thread is never held up past ${REQUEST_LOOP_BOUND_MS} ms`, () => {
  it('by events whose conditions backtrack, cost too much at runtime or nest too deep (ingest and apply run in the engine thread)', async () => {
    await saveCrowd(database(), tenantId, 'three', RoaringBitmap32.from([1, 2, 3]), 'replace');
    const comprehension = 'event.data.a.exists(x, event.data.a.exists(y, event.data.a.exists(z, x + y + z == 0.5)))';
    const instanceId = await startInstance(
      {
        steps: [
          {
            name: 'entry',
            kind: 'branch',
            branches: [
              { condition: 'event.data.s.matches("(a+)+$")', next: 'matched' },
              { condition: comprehension, next: 'matched' },
              { condition: 'true', next: 'other' },
            ],
          },
          { name: 'matched', kind: 'direct' },
          { name: 'other', kind: 'direct' },
        ],
      },
      'three',
    );
    const list = range(0, 300).map((i) => i + 0.25);
    const events = [
      { user: 1, type: 'e', data: { s: 'a'.repeat(27) + 'b', a: [] } }, // 9.3 s of backtracking with a JS regex
      { user: 2, type: 'e', data: { s: 'b', a: list } }, // 300³ comprehension steps: over the runtime budget
      { user: 3, type: 'e', data: { s: 'aaa', a: [] } },
    ];
    const nested = `{"events":[{"user":1,"type":"e","data":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}]}`;
    const admin = { kind: 'admin' } as const;
    const body = JSON.stringify({ tenant: tenantId, events });
    const delayMs = await requestLoopDelayWhile(async () => {
      const refused = await engine.ingestBody(admin, Buffer.from(nested), Date.now()).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(AppError);
      expect((refused as AppError).code).toBe('invalid_json');
      expect(await engine.ingestBody(admin, Buffer.from(body), Date.now())).toMatchObject({ tenantId, accepted: 3, replayed: false });
      await countsUntil(instanceId, (s) => s.matched === 1 && s.other === 1);
      // User 2's partition commits on its own: its dead letter may land after the other two moved.
      await until(
        'dead letters',
        async () => (await listDeadLetters(database(), tenantId, { limit: 10 })).deadLetters,
        (letters) => letters.length > 0,
      );
    });
    console.log(`[request loop] events with costly conditions and a nested batch: max delay ${delayMs.toFixed(0)} ms`);
    expect(await engine.getCounts(tenantId, instanceId)).toMatchObject({ steps: { entry: 1, matched: 1, other: 1 } });
    const { deadLetters } = await listDeadLetters(database(), tenantId, { limit: 10 });
    expect(deadLetters.map((letter) => [letter.event.user, letter.reason])).toEqual([[2, expect.stringMatching(/runtime budget/)]]);
    expect(delayMs).toBeLessThan(REQUEST_LOOP_BOUND_MS);
  });

  it('by roaring uploads of 2^27 users in 29 KB and of 2^32 users, refused from their headers', async () => {
    const full = (end: number) => {
      const bitmap = new RoaringBitmap32();
      bitmap.addRange(0, end);
      bitmap.runOptimize();
      return new Uint8Array(bitmap.serialize('portable'));
    };
    const uploads = [full(2 ** 27), full(2 ** 32)];
    const refuse = (users: number) => {
      if (users > 100_000_000) throw new AppError('payload_too_large', `${users} users`);
    };
    const delayMs = await requestLoopDelayWhile(async () => {
      for (const bytes of uploads) {
        const body = (async function* () {
          yield bytes;
        })();
        const refused = await parseCrowdUpload(body, 'application/octet-stream', 1 << 20, refuse).catch((error: unknown) => error);
        expect((refused as AppError).code).toBe('payload_too_large');
      }
    });
    console.log(`[request loop] huge roaring uploads: max delay ${delayMs.toFixed(0)} ms`);
    expect(delayMs).toBeLessThan(REQUEST_LOOP_BOUND_MS);
  });

  it('by a timer with a per-user profile condition over 50,000 users, a chain of 1,000 direct steps, and a timer moving 1M users every second', async () => {
    const profiled = range(1_000_000, 50_000);
    await saveCrowd(database(), tenantId, 'profiled', RoaringBitmap32.from(profiled), 'replace');
    const text = profiled.map((user) => JSON.stringify({ user, attributes: { tz: user % 2 ? 'Europe/Paris' : 'Asia/Tokyo' } })).join('\n');
    await importProfiles(database(), tenantId, new Blob([text]).stream(), 'ndjson');
    await saveCrowd(database(), tenantId, 'thousand', RoaringBitmap32.from(range(0, 1_000)), 'replace');
    const million = new RoaringBitmap32();
    million.addRange(2_000_000, 3_000_000);
    await saveCrowd(database(), tenantId, 'million', million, 'replace');
    const chain = Array.from({ length: 1_000 }, (_, i) => ({ name: `s${i}`, kind: 'direct', ...(i < 999 ? { next: `s${i + 1}` } : {}) }));

    const delayMs = await requestLoopDelayWhile(async () => {
      const europe = await startInstance(
        {
          steps: [
            { name: 'wait', kind: 'timer', cron: '* * * * * *', condition: 'profile.tz.startsWith("Europe/")', next: 'european' },
            { name: 'european', kind: 'direct' },
          ],
        },
        'profiled',
      );
      const chained = await startInstance({ steps: chain }, 'thousand');
      const ticking = await startInstance(
        // Even seconds there, odd seconds back (with one cron both would fire in the same tick: there and back at once).
        {
          steps: [
            { name: 'tick', kind: 'timer', cron: '0/2 * * * * *', next: 'tock' },
            { name: 'tock', kind: 'timer', cron: '1/2 * * * * *', next: 'tick' },
          ],
        },
        'million',
      );
      await countsUntil(europe, (s) => s.european === 25_000);
      await countsUntil(chained, (s) => s.s999 === 1_000);
      let moves = 0;
      await countsUntil(ticking, (s) => {
        moves += s.tock === 1_000_000 && moves % 2 === 0 ? 1 : s.tick === 1_000_000 && moves % 2 === 1 ? 1 : 0;
        return moves >= 3; // there, back, and there again
      });
    });
    console.log(`[request loop] timers over 50,000 profiled and 1M users, a 1,000-step chain: max delay ${delayMs.toFixed(0)} ms`);
    expect(delayMs).toBeLessThan(REQUEST_LOOP_BOUND_MS);
  }, 180_000);
});
