import { callerTenant } from '@/server/tenants/tenants';
import { commitConsumer, CommitBody, ConsumerParams, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams, readJson } from '@/server/http/respond';
import { callerRoute } from '@/server/http/request-context';

export const POST = callerRoute<{ name: string }>(async ({ request, principal, database, clock }, { name }) => {
  const tenant = await callerTenant(database, principal, queryParams(request, TenantQuery).tenant);
  const consumerName = ConsumerParams.parse({ name }).name;
  const { cursor } = await readJson(request, CommitBody);
  return json(await commitConsumer(database, tenant.id, consumerName, cursor, clock.now()));
});
