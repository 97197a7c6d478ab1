import { json, queryParams, route } from '@/server/http/respond';
import { ImportQuery, importFormat, importProfiles } from '@/server/profiles/import';
import { parseColumnTypes } from '@/server/profiles/import-parse';
import { tenantFromRequest } from '@/server/tenants/tenants';

/** Streamed bulk import (NDJSON or CSV with a header), merged like the upsert route, committed in chunks. */
export const POST = route<{ tenant: string }>(async (request, params) => {
  const tenant = await tenantFromRequest(request, params.tenant);
  // The query is checked before the body's type, so a bad `types` or an unknown parameter is named as such.
  const { types = null } = queryParams(request, ImportQuery);
  parseColumnTypes(types);
  const format = importFormat(request.headers.get('content-type'));
  return json(await importProfiles(tenant.id, request.body, format, types));
});
