import { describe, expect, it } from 'vitest';
import { FairTurns } from '../../server/engine/slices';
import { TenantRuntime } from '../../server/engine/tenant';
import { previewPath } from '../../server/engine/preview';
import { AppError } from '../../server/errors';
import { newId } from '../../server/ids';
import { db, database } from '../helpers/app-db';
import { createWorkflow } from '../../server/workflows/workflows';

// The path preview's walk has the ad hoc query deadline (server/conditions/deadline.ts): a clock the test drives moves
// 1 ms at each look, so a chain of 150 steps walked against a 20 ms deadline stops with 422 query_deadline, saying how
// far it got; with the default deadline the same walk ends at the exit.

function steppingClock() {
  let now = 0;
  return { now: () => now++ };
}

async function chainWorkflow(length: number): Promise<{ tenantId: string; workflowId: string }> {
  const tenantId = newId('tn');
  const tenant = await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 1 } });
  const steps = Array.from({ length }, (_, i) => ({ name: `s${i}`, kind: 'direct' as const, ...(i + 1 < length ? { next: `s${i + 1}` } : {}) }));
  const saved = await createWorkflow(database(), tenant, { name: 'chain', definition: { steps } });
  return { tenantId, workflowId: saved.id };
}

/** What previewPath reads of the engine: the tenant (no instance running), the storage and the clock. */
function source(tenantId: string, clock: { now: () => number }) {
  const tenant = new TenantRuntime(database(), tenantId, { partitions: 1, userBlock: 1 }, new FairTurns());
  return {
    database: database(),
    committed: undefined,
    clock,
    tenant: async () => tenant,
    isRecovering: () => false,
    findRuntime: () => undefined,
  } as unknown as Parameters<typeof previewPath>[0];
}

describe('the path preview', () => {
  it('stops at its deadline with 422 query_deadline, saying how many steps it walked', async () => {
    const { tenantId, workflowId } = await chainWorkflow(150);
    let thrown: unknown;
    try {
      await previewPath(source(tenantId, steppingClock()), tenantId, workflowId, { user: 1, version: 1 }, { deadlineMs: 20 });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('query_deadline');
    expect((thrown as AppError).message).toMatch(/^The path preview was stopped at its deadline of 20 ms \(\d+ steps walked\)/);

    const walked = await previewPath(source(tenantId, steppingClock()), tenantId, workflowId, { user: 1, version: 1 });
    expect(walked.hops).toHaveLength(149);
    expect(walked.end).toEqual({ step: 's149', reason: 'exit' });
  });

  it('stops at a loop that uses no event instead of walking for ever', async () => {
    const tenantId = newId('tn');
    const tenant = await db().tenant.create({ data: { id: tenantId, name: tenantId.toLowerCase().replace(/[^a-z0-9]/g, ''), partitions: 1 } });
    const definition = {
      steps: [
        { name: 'wait', kind: 'branch' as const, branches: [{ condition: 'event.type == "buy"', next: 'done' }], timeout: { after: '1d', next: 'again' } },
        { name: 'again', kind: 'delay' as const, after: '1h', next: 'wait' },
        { name: 'done', kind: 'direct' as const },
      ],
    };
    const { id } = await createWorkflow(database(), tenant, { name: 'loop', definition });
    const looped = await previewPath(source(tenantId, steppingClock()), tenantId, id, { user: 5, version: 1 });
    expect(looped.hops.map((hop) => `${hop.from}->${hop.to}`)).toEqual(['wait->again', 'again->wait']);
    expect(looped.end).toEqual({ step: 'wait', reason: 'loop' });
    const bought = await previewPath(source(tenantId, steppingClock()), tenantId, id, { user: 5, version: 1, events: [{ type: 'buy' }] });
    expect(bought.hops.map((hop) => `${hop.from}->${hop.to}`)).toEqual(['wait->done']);
  });
});
