// Holdout groups (issue 37 §4), engine only: a start of the plain start's journey holding out 10% of its users, timed
// until the instance runs with every user counted and the holdout group's size exact, against a start of the same
// journey without a holdout timed the same way in the same state (this VM's speed varies between runs, and the
// run's first start pays for warming up). Plain and holdout starts alternate, twice each, each stopped again before
// the next; the fastest of each is compared. The expected group size is the same hash (core/model/holdout.ts)
// counted here after the clock stopped.
import type { Engine } from '../../server/engine/engine';
import type { Counts } from '../../server/engine/types';
import { holdoutPlan, isHeldOut } from '../../core/model/holdout';
import { WorkflowDefinition } from '../../core/model/workflow';
import { database as processDatabase } from '../../test/helpers/app-db';
import { createWorkflow } from '../../server/workflows/workflows';
import { BRANCH_JOURNEY } from '../lib/data';
import type { Measured } from './journey';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const HOLDOUT = { percent: 10 };

type Tenant = Parameters<typeof createWorkflow>[1];

/**
 * Starts `workflowId` over crowd `all`: ms until `counted` says every user is (by default: in a step); then the counts;
 * stopped again.
 */
export async function timedStart(
  engine: Engine,
  tenant: Tenant,
  workflowId: string,
  users: number,
  counted = (counts: Counts) => counts.total === users,
): Promise<{ ms: number; counts: Counts }> {
  await sleep(500);
  // The engine's heap holds 10M profiles by now: a major collection of the earlier scenarios' garbage landing inside
  // one start (plain starts of one run took 54-344 ms) decided which start looked fastest; each start pays only its own.
  (globalThis as { gc?: () => void }).gc?.();
  const started = performance.now();
  const { instanceId } = await engine.startInstance(tenant.id, workflowId, { crowd: 'all', reentry: 'allow' });
  for (;;) {
    const { state } = await engine.getInstance(tenant.id, instanceId);
    if (state === 'failed' || state === 'stopped') throw new Error(`instance ${instanceId} is ${state}`);
    if (state === 'running') {
      // Just after `running` the engine may not answer for the instance yet: until every user is counted.
      const counts = await engine.getCounts(tenant.id, instanceId);
      if (counted(counts)) {
        const ms = performance.now() - started;
        await engine.stopInstance(tenant.id, instanceId);
        while ((await engine.getInstance(tenant.id, instanceId)).state !== 'stopped') await sleep(20);
        return { ms, counts };
      }
      if (performance.now() - started > 120_000) throw new Error(`counts not complete: ${JSON.stringify(counts)}`);
    }
    await sleep(5);
  }
}

/** The fastest of two starts of `workflowId` and of two starts of the plain journey, alternating (see timedStart). */
export type AgainstPlain = { best: number; bestPlain: number; ms: number[]; plainMs: number[] };

/**
 * Starts `workflowId` and a plain journey (named `plainName`) alternately, twice each, the other until `counted` (then
 * `check` looks at its counts), the plain one until every user is counted; the fastest of each.
 */
export async function againstPlainStarts(
  engine: Engine,
  tenant: Tenant,
  users: number,
  run: { plainName: string; workflowId: string; counted?: (counts: Counts) => boolean; check?: (counts: Counts) => void },
): Promise<AgainstPlain> {
  const plain = await createWorkflow(processDatabase(), tenant, { name: run.plainName, definition: WorkflowDefinition.parse(BRANCH_JOURNEY) });
  const plainMs: number[] = [];
  const ms: number[] = [];
  for (let round = 0; round < 2; round++) {
    plainMs.push((await timedStart(engine, tenant, plain.id, users)).ms);
    const started = await timedStart(engine, tenant, run.workflowId, users, run.counted);
    run.check?.(started.counts);
    ms.push(started.ms);
  }
  return { best: Math.min(...ms), bestPlain: Math.min(...plainMs), ms: ms.map(Math.round), plainMs: plainMs.map(Math.round) };
}

/** `tenant` already holds crowd `all` = users 0…users-1. */
export async function measureHoldoutStart(engine: Engine, tenant: Tenant, users: number): Promise<Measured> {
  const heldOut = await createWorkflow(processDatabase(), tenant, {
    name: 'held-out',
    definition: WorkflowDefinition.parse({ ...BRANCH_JOURNEY, holdout: HOLDOUT }),
  });
  const plan = holdoutPlan(HOLDOUT, heldOut.id)!;
  let expected = 0;
  for (let user = 0; user < users; user++) if (isHeldOut(plan, user)) expected++;
  const { best, bestPlain, ms, plainMs } = await againstPlainStarts(engine, tenant, users, {
    plainName: 'plain-again',
    workflowId: heldOut.id,
    check: (counts) => {
      if (counts.holdout?.entered !== expected) throw new Error(`holdout group of ${counts.holdout?.entered} users, expected ${expected}`);
    },
  });
  return {
    value: best / bestPlain,
    note: `(${Math.round(best)} ms; plain start ${Math.round(bestPlain)} ms; ${expected.toLocaleString('en-US')} held out)`,
    details: { holdoutMs: ms, plainMs, heldOut: expected },
  };
}
