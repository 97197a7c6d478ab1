// The procedure runner alone, as a server runs it: N independent 3-step procedures (throughput: how many steps per
// second the runner commits), N sharing one exclusive lock key (one at a time: the latency of a claim and three
// commits), and fairness: 90% of N queued by one tenant, then 10% by another, all at once.
import { ProcedureTypes } from '../../server/procedures/registry';
import { createProcedureRunner } from '../../server/procedures/runner';
import type { LockKey } from '../../server/procedures/types';
import { db, database as processDatabase } from '../../test/helpers/app-db';
import type { ScratchDatabase } from '../lib/database';
import type { Measured } from './journey';
import { closeApp, useDatabase } from './rows';

export interface ProcedureFigures {
  /** Steps per second, N independent procedures. */
  throughput: Measured;
  /** Steps per second, N procedures serialized on one key. */
  serialized: Measured;
  /** When the small tenant's last procedure finished, as a share of the whole run (lower is fairer; 0.1 is its share). */
  fairness: Measured;
}

const STEPS = 3;

function benchTypes(): ProcedureTypes {
  const registered = new ProcedureTypes();
  const types: [string, LockKey[]][] = [
    ['bench.free', []],
    ['bench.locked', [{ key: 'bench/one', mode: 'exclusive' }]],
  ];
  for (const [type, keys] of types) {
    registered.register({
      type,
      supportsRollback: false,
      create: (raw) => {
        const state = { ...(raw as { n: number }) };
        return {
          lockKeys: () => [...keys],
          state: () => state,
          execute: async () => (++state.n < STEPS ? { kind: 'executing' as const } : { kind: 'done' as const }),
        };
      },
    });
  }
  return registered;
}

/** Submits the procedures (untimed), then times the runner from its start until none is unfinished. */
async function run(
  types: ProcedureTypes,
  batches: { type: string; tenantId: string; count: number }[],
): Promise<{ seconds: number; total: number; startedAtMs: number }> {
  const runner = createProcedureRunner(processDatabase(), { types, owner: 'bench', pollMs: 50 });
  for (const batch of batches) {
    await Promise.all(Array.from({ length: batch.count }, () => runner.submit(batch.type, { n: 0 }, { tenantId: batch.tenantId })));
  }
  const started = performance.now();
  const startedAtMs = Date.now();
  await runner.start();
  // One count per poll, not a read per procedure: this measures the runner, not the waiting.
  while ((await db().procedure.count({ where: { state: { notIn: ['done', 'failed'] } } })) > 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const seconds = (performance.now() - started) / 1000;
  await runner.stop();
  return { seconds, total: batches.reduce((sum, batch) => sum + batch.count, 0), startedAtMs };
}

export async function measureProcedures(database: ScratchDatabase, count: number): Promise<ProcedureFigures> {
  await useDatabase(database.url);
  const types = benchTypes();
  const free = await run(types, [{ type: 'bench.free', tenantId: 'bench-a', count }]);
  const throughput = (free.total * STEPS) / free.seconds;
  console.log(`  ${count} independent procedures × ${STEPS} steps: ${free.seconds.toFixed(2)} s = ${throughput.toFixed(0)} steps/s`);

  const serialCount = Math.max(10, Math.round(count / 10));
  const locked = await run(types, [{ type: 'bench.locked', tenantId: 'bench-a', count: serialCount }]);
  const serialized = (locked.total * STEPS) / locked.seconds;
  console.log(`  ${serialCount} procedures on one exclusive key: ${locked.seconds.toFixed(2)} s = ${serialized.toFixed(0)} steps/s`);

  await db().procedure.deleteMany({});
  const small = Math.round(count / 10);
  const mixed = await run(types, [
    { type: 'bench.free', tenantId: 'bench-big', count: count - small },
    { type: 'bench.free', tenantId: 'bench-small', count: small },
  ]);
  const lastSmall = await db().procedure.aggregate({ where: { tenantId: 'bench-small' }, _max: { finishedAt: true } });
  const smallSeconds = (lastSmall._max.finishedAt!.getTime() - mixed.startedAtMs) / 1000;
  const share = Math.max(0, smallSeconds) / mixed.seconds;
  console.log(
    `  ${count - small} procedures of one tenant queued before ${small} of another: the second tenant's were all done ${(share * 100).toFixed(0)}% into the run`,
  );
  await closeApp();
  return {
    throughput: { value: throughput, note: `(${count} procedures × ${STEPS} steps)` },
    serialized: { value: serialized, note: `(${serialCount} on one key)` },
    fairness: { value: share * 100, note: `(${small} of ${count}, queued last)` },
  };
}
