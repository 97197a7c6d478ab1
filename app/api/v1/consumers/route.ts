import { authenticate } from '@/server/auth';
import { callerTenant } from '@/server/tenants/tenants';
import { listConsumers, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';

export const GET = route(async (request) => {
  const tenant = await callerTenant(database(), await authenticate(request), queryParams(request, TenantQuery).tenant);
  return json({ consumers: await listConsumers(database(), tenant.id) });
});
