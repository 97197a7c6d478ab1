import { crowdView } from '@/server/crowd';
import { getEngine } from '@/server/engine';
import { json, readJson, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { saveStepCrowd, StepCrowdBody } from '@/server/workflows/step-crowd';

/** The users at a step (or converted from it) as a new crowd. */
export const POST = route<{ tenant: string; iid: string; step: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const body = await readJson(request, StepCrowdBody);
  const crowd = await saveStepCrowd(getEngine(), database(), tenant, params.iid, params.step, body);
  return json(crowdView(crowd), 201);
});
