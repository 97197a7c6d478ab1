// Holdout groups where deliveries are cut (issue 37 §4), beside frequency caps (./capping.ts): an action move's
// held-out users get no delivery. Who is held out is the pure function of core/model/holdout.ts with the plan of the
// instance's workflow version, the same the engine applied when they entered (a running instance's holdout cannot
// change, server/engine/instances.ts), so nothing is read from the engine and nothing is stored per user.
import { RoaringBitmap32 } from '../crowd/bitmap';
import { heldOutUsers } from '../engine/holdout-bitmap';
import { holdoutPlan, type HoldoutPlan, type HoldoutSpec } from '../../core/model/holdout';
import type { Database } from '../storage/database';
import { instanceDefinition } from './instance-definition';

/** The holdout plans of the instances a destination's moves belong to, read once each (an instance's never changes). */
export class HoldoutPlans {
  private readonly plans = new Map<string, HoldoutPlan | null>();

  constructor(private readonly database: Database) {}

  async of(tenantId: string, instanceId: string): Promise<HoldoutPlan | null> {
    let plan = this.plans.get(instanceId);
    if (plan === undefined) {
      plan = await readPlan(this.database, tenantId, instanceId);
      this.plans.set(instanceId, plan);
    }
    return plan;
  }
}

async function readPlan(database: Database, tenantId: string, instanceId: string): Promise<HoldoutPlan | null> {
  const running = await instanceDefinition(database, tenantId, instanceId);
  return running ? holdoutPlan(running.definition.holdout as HoldoutSpec | undefined, running.workflowId) : null;
}

/** A bulk move's users less its held-out ones: an AND with the plan's masks and one ANDNOT. */
export function withoutHeldOut(users: RoaringBitmap32, plan: HoldoutPlan): RoaringBitmap32 {
  const held = heldOutUsers(plan, users);
  return held.isEmpty ? users : RoaringBitmap32.andNot(users, held);
}
