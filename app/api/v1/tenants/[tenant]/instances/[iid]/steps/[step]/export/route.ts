import { StepExportQuery } from '@/server/http/engine-api';
import { queryParams } from '@/server/http/respond';
import { stepExportResponse } from '@/server/workflows/step-export';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string; iid: string; step: string }>(async ({ tenant, request, database, engine, formatters, clock }, params) => {
  const query = queryParams(request, StepExportQuery);
  return stepExportResponse(engine, formatters, database, tenant, { instanceId: params.iid, step: params.step, ...query }, clock.now());
});
