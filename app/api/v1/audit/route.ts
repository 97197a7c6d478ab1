import { json, queryParams } from '@/server/http/respond';
import { AuditQuery, listAudit } from '@/server/security/audit';
import { adminRoute } from '@/server/http/request-context';

export const GET = adminRoute(async ({ request, database }) => {
  return json(await listAudit(database, queryParams(request, AuditQuery)));
});
