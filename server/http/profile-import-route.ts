import { ImportQuery, importFormat } from '../profiles/import';
import { parseColumnTypes } from '../profiles/import-parse';
import { json, queryParams } from './respond';
import { tenantRoute } from './request-context';

/**
 * POST /api/v1/tenants/{tenant}/profiles/import — served by the route file and by server/http/http-server.ts alike:
 * our server hands the body over as the socket's own chunks (Next.js copied each one into a stream that read the whole
 * body whether or not the import wanted it), and a body left unread after a bad line no longer stalls the connection.
 * Streamed bulk import (NDJSON or CSV with a header), merged like the upsert route, committed in chunks — by the
 * engine, which holds the profile index: with an engine thread this thread only passes the body's bytes on.
 */
export const postProfileImport = tenantRoute<{ tenant: string }>(async ({ tenant, request, engine }) => {
  // The query is checked before the body's type, so a bad `types` or an unknown parameter is named as such.
  const { types = null } = queryParams(request, ImportQuery);
  parseColumnTypes(types);
  const format = importFormat(request.headers.get('content-type'));
  return json(await engine.profiles.importProfiles(tenant.id, request.body, format, types));
});
