import { callerTenant } from '@/server/tenants/tenants';
import { NotificationsQuery, readNotifications } from '@/server/notifications/notifications';
import { json, queryParams } from '@/server/http/respond';
import { callerRoute } from '@/server/http/request-context';

export const GET = callerRoute(async ({ request, principal, database }) => {
  const query = queryParams(request, NotificationsQuery);
  const tenant = await callerTenant(database, principal, query.tenant);
  return json(await readNotifications(database, tenant.id, query.after, query.limit));
});
