import { getEngine } from '@/server/engine';
import { StepExportQuery } from '@/server/http/engine-api';
import { queryParams, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';
import { tenantFromRequest } from '@/server/tenants/tenants';
import { stepExportResponse } from '@/server/workflows/step-export';

export const GET = route<{ tenant: string; iid: string; step: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const query = queryParams(request, StepExportQuery);
  return stepExportResponse(getEngine(), database(), tenant, { instanceId: params.iid, step: params.step, ...query }, Date.now());
});
