// Step → crowd: the users at a step (or those who converted from it) saved as a new crowd in one call, for
// re-targeting. The crowd is a copy of the step's bitmap (no per-user work); the name follows the crowd upload's rules.
import { z } from 'zod';
import { assertCrowdAbsent, CrowdName, type CrowdMeta, saveCrowd } from '../crowd/store';
import type { EngineHandle } from '../engine/handle';
import { checkCrowdUsers, tenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';
import type { Tenant } from '../tenants/tenants';

export const StepCrowdBody = z.strictObject({
  name: CrowdName.describe('The new crowd'),
  users: z
    .enum(['in', 'converted'])
    .default('in')
    .describe('`in`: users in the step now; `converted`: users who reached the goal from it (422 when the workflow has no goal)'),
});

/** POST …/instances/{iid}/steps/{step}/crowd: 409 when the name is taken, 404 for an unknown instance or step. */
export async function saveStepCrowd(
  engine: EngineHandle,
  database: Database,
  tenant: Tenant,
  instanceId: string,
  step: string,
  body: z.infer<typeof StepCrowdBody>,
): Promise<CrowdMeta> {
  await assertCrowdAbsent(database, tenant.id, body.name, 'choose another name, or delete that crowd first');
  const bitmap = await engine.stepBitmap(tenant.id, instanceId, step, body.users);
  try {
    checkCrowdUsers(bitmap.size, await tenantLimits(database, tenant.id));
    return (await saveCrowd(database, tenant.id, body.name, bitmap, 'create')).crowd;
  } finally {
    bitmap.dispose();
  }
}
