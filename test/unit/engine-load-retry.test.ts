// Loading the tenants at start rides out transient storage errors: one failed read of the tenant list or of a tenant
// must not leave the engine without partition loops and timers until something uses the tenant.
import { afterEach, expect, it } from 'vitest';
import { Engine } from '../../server/engine/engine';
import { database } from '../helpers/app-db';
import { faultyDatabase } from '../fixtures/faulty-database';
import { crowd, start, startHarness, workflow, type Harness } from '../fixtures/engine/harness';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('loads every tenant at start through transient errors of its first reads', async () => {
  h = await startHarness(2);
  await crowd(h, 'c', [1, 2, 3, 4]);
  const hourly = await workflow(h, {
    steps: [
      { name: 'wait', kind: 'timer', cron: '0 0 * * * *', next: 'done' },
      { name: 'done', kind: 'direct' },
    ],
  });
  const id = await start(h, hourly, 'c');
  await h.engine.stop();

  const provider = (process.env.CROWDFLOW_TEST_PROVIDER ?? 'sqlite') as 'sqlite' | 'postgres';
  const faulty = faultyDatabase(database(), { provider, rate: 0, seed: 7 });
  h.engine = new Engine({
    ...h.engineOptions,
    database: faulty.database,
    ingestState: h.app.state,
    clock: h.clock,
    runner: h.runner,
    owner: `test-${h.tenantId}`,
  });
  faulty.failNext(3);
  await h.engine.start();
  await h.engine.loaded();
  expect(faulty.injected.map((fault) => fault.operation).join(', ')).toMatch(/tenant/i);
  expect(h.engine.findRuntime(id)?.counts().steps).toEqual({ wait: 4, done: 0 });
});
