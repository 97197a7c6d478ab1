import { authenticate } from '@/server/auth';
import { callerTenant } from '@/server/tenants/tenants';
import { NotificationsQuery, readNotifications } from '@/server/notifications/notifications';
import { json, queryParams, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';

export const GET = route(async (request) => {
  const query = queryParams(request, NotificationsQuery);
  const tenant = await callerTenant(database(), await authenticate(request), query.tenant);
  return json(await readNotifications(database(), tenant.id, query.after, query.limit));
});
