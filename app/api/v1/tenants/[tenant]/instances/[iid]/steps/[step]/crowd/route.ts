import { crowdView } from '@/server/crowd';
import { json, readJson } from '@/server/http/respond';
import { saveStepCrowd, StepCrowdBody } from '@/server/workflows/step-crowd';
import { tenantRoute } from '@/server/http/request-context';

/** The users at a step (or converted from it) as a new crowd. */
export const POST = tenantRoute<{ tenant: string; iid: string; step: string }>(async ({ tenant, request, database, engine }, params) => {
  const body = await readJson(request, StepCrowdBody);
  const crowd = await saveStepCrowd(engine, database, tenant, params.iid, params.step, body);
  return json(crowdView(crowd), 201);
});
