// The tenants section's setup and sweeps (bench/scenarios/tenants.ts): tenants created over the API a few at a time,
// each with a 10,000-user instance of TICK_WORKFLOW, and the counts of many instances read with a small concurrency.
import { denseBitmap } from '../lib/data';
import { progress } from '../lib/report';
import { ApiError, call, type BenchServer } from '../lib/server';
import type { CountsJson } from '../lib/sse';

export const USERS = 10_000;
const PARTITIONS = 8;
/** Requests in flight while tenants are created and while counts are swept. */
const SETUP_CONCURRENCY = 4;
export const SWEEP_CONCURRENCY = 16;

/** `ping` fires at even minutes, `pong` at odd ones; each moves its users to the other. */
export const TICK_WORKFLOW = {
  steps: [
    { name: 'ping', kind: 'timer', cron: '0 */2 * * * *', next: 'pong' },
    { name: 'pong', kind: 'timer', cron: '0 1-59/2 * * * *', next: 'ping' },
  ],
};
/** The crowd of every instance: users 0 … 9,999, as a roaring upload. */
export const tickCrowd = () => Buffer.from(denseBitmap(USERS).serialize('portable'));

export type Tenant = { name: string; workflowId: string; instanceId: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

export async function counts(server: Pick<BenchServer, 'baseUrl'>, tenant: string, instanceId: string): Promise<CountsJson | undefined> {
  try {
    return await call<CountsJson>(server, 'GET', `/tenants/${tenant}/instances/${instanceId}/counts`);
  } catch {
    return undefined; // not answering yet (starting, recovering): the caller asks again
  }
}

/** Runs `probe` over `items`, `concurrency` at a time; returns the items it did not return true for. */
export async function sweep<T>(items: T[], concurrency: number, probe: (item: T) => Promise<boolean>): Promise<T[]> {
  const left: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) if (!(await probe(items[i]))) left.push(items[i]);
    }),
  );
  return left;
}

/** Sweeps until every item passed; returns the ms it took. */
export async function sweepUntilAll<T>(what: string, items: T[], probe: (item: T) => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = performance.now();
  let left = items;
  while (left.length > 0) {
    left = await sweep(left, SWEEP_CONCURRENCY, probe);
    if (left.length > 0 && performance.now() - started > timeoutMs) throw new Error(`${what}: ${left.length} of ${items.length} not after ${timeoutMs} ms`);
  }
  return performance.now() - started;
}

/**
 * Asked again while the server answers 503 (SQLite busy past a request's wait, on a loaded machine); a create whose
 * first attempt committed after all answers 409 on the second, and `committed` then finds what it made.
 */
export async function retried<T>(busy: { retries: number }, work: () => Promise<T>, committed?: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (!(error instanceof ApiError) || attempt > 30) throw error;
      if (error.status === 409 && attempt > 1 && committed) return committed();
      if (error.status !== 503) throw error;
      busy.retries++;
      await sleep(250 * Math.min(attempt, 8));
    }
  }
}

export async function addTenants(server: BenchServer, tenants: Tenant[], upTo: number, crowd: Buffer): Promise<number> {
  const names = Array.from({ length: upTo - tenants.length }, (_, i) => `t${String(tenants.length + i).padStart(4, '0')}`);
  const report = progress('tenants created', 10_000);
  const busy = { retries: 0 };
  let done = 0;
  await sweep(names, SETUP_CONCURRENCY, async (name) => {
    await retried(
      busy,
      () => call(server, 'POST', '/tenants', { name, partitions: PARTITIONS }),
      async () => undefined,
    );
    await retried(busy, () => call(server, 'PUT', `/tenants/${name}/crowds/all`, crowd, 'application/octet-stream'));
    const workflow = await retried(
      busy,
      () => call<{ id: string }>(server, 'POST', `/tenants/${name}/workflows`, { name: 'tick', definition: TICK_WORKFLOW }),
      async () =>
        (await call<{ workflows: { id: string; name: string }[] }>(server, 'GET', `/tenants/${name}/workflows`)).workflows.find((w) => w.name === 'tick')!,
    );
    const { instanceId } = await retried(busy, () =>
      call<{ instanceId: string }>(server, 'POST', `/tenants/${name}/workflows/${workflow.id}/start`, { crowd: 'all' }),
    );
    tenants.push({ name, workflowId: workflow.id, instanceId });
    report(++done, names.length, busy.retries > 0 ? `${busy.retries} requests retried after a 503` : undefined);
    return true;
  });
  return busy.retries;
}

/**
 * Waits until every instance is counted; one whose start procedure failed (seen on a loaded SQLite: `Operation has
 * timed out` in its first step, not tried again) is started again. Returns how many failed.
 */
export async function untilCounted(server: BenchServer, tenants: Tenant[]): Promise<number> {
  let failed = 0;
  await sweepUntilAll(
    'every instance counted',
    tenants,
    async (t) => {
      if ((await counts(server, t.name, t.instanceId))?.total === USERS) return true;
      const instance = await call<{ state: string }>(server, 'GET', `/tenants/${t.name}/instances/${t.instanceId}`).catch(() => undefined);
      if (instance?.state === 'failed') {
        failed++;
        console.log(`  ! the start of ${t.name}'s instance ${t.instanceId} failed; starting it again`);
        t.instanceId = (
          await retried({ retries: 0 }, () =>
            call<{ instanceId: string }>(server, 'POST', `/tenants/${t.name}/workflows/${t.workflowId}/start`, { crowd: 'all' }),
          )
        ).instanceId;
      }
      return false;
    },
    600_000,
  );
  return failed;
}
