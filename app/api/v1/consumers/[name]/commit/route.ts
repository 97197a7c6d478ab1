import { authenticate } from '@/server/auth';
import { callerTenant } from '@/server/tenants/tenants';
import { commitConsumer, CommitBody, ConsumerParams, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams, readJson, route } from '@/server/http/respond';
import { database } from '@/server/storage/database';

export const POST = route<{ name: string }>(async (request, { name }) => {
  const tenant = await callerTenant(database(), await authenticate(request), queryParams(request, TenantQuery).tenant);
  const consumerName = ConsumerParams.parse({ name }).name;
  const { cursor } = await readJson(request, CommitBody);
  return json(await commitConsumer(database(), tenant.id, consumerName, cursor, Date.now()));
});
