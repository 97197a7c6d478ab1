import { requireAdmin } from '@/server/auth';
import { json, queryParams, route } from '@/server/http/respond';
import { AuditQuery, listAudit } from '@/server/security/audit';
import { database } from '@/server/storage/database';

export const GET = route(async (request) => {
  await requireAdmin(request);
  return json(await listAudit(database(), queryParams(request, AuditQuery)));
});
