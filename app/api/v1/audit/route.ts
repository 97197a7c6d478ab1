import { requireAdmin } from '@/server/auth';
import { json, queryParams, route } from '@/server/http/respond';
import { AuditQuery, listAudit } from '@/server/security/audit';

export const GET = route(async (request) => {
  await requireAdmin(request);
  return json(await listAudit(queryParams(request, AuditQuery)));
});
