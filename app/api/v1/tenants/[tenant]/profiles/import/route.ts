import { json, route } from '@/server/http/respond';
import { importFormat, importProfiles } from '@/server/profiles/import';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** Streamed bulk import (NDJSON or CSV with a header), merged like the upsert route, committed in chunks. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  const format = importFormat(request.headers.get('content-type'));
  return json(await importProfiles(tenant.id, request.body, format, new URL(request.url).searchParams.get('types')));
});
