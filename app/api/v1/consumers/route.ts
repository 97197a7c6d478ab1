import { callerTenant } from '@/server/tenants/tenants';
import { listConsumers, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams } from '@/server/http/respond';
import { callerRoute } from '@/server/http/request-context';

export const GET = callerRoute(async ({ request, principal, database }) => {
  const tenant = await callerTenant(database, principal, queryParams(request, TenantQuery).tenant);
  return json({ consumers: await listConsumers(database, tenant.id) });
});
