import { callerTenant } from '@/server/tenants/tenants';
import { ConsumerParams, createConsumer, CreateConsumerBody, deleteConsumer, getConsumer, TenantQuery } from '@/server/notifications/notifications';
import { json, queryParams, readJson } from '@/server/http/respond';
import { callerRoute, type Caller } from '@/server/http/request-context';

type Params = { name: string };

function tenantOf({ request, principal, database }: Caller) {
  return callerTenant(database, principal, queryParams(request, TenantQuery).tenant);
}

export const GET = callerRoute<Params>(async (caller, { name }) => {
  const tenant = await tenantOf(caller);
  return json(await getConsumer(caller.database, tenant.id, ConsumerParams.parse({ name }).name));
});

/** Creates the consumer (201) at `start`; an existing one is returned unchanged (200). */
export const PUT = callerRoute<Params>(async (caller, { name }) => {
  const tenant = await tenantOf(caller);
  const consumerName = ConsumerParams.parse({ name }).name;
  const body = await readJson(caller.request, CreateConsumerBody);
  const { consumer, created } = await createConsumer(caller.database, tenant.id, consumerName, body.start);
  return json(consumer, created ? 201 : 200);
});

export const DELETE = callerRoute<Params>(async (caller, { name }) => {
  const tenant = await tenantOf(caller);
  await deleteConsumer(caller.database, tenant.id, ConsumerParams.parse({ name }).name);
  return new Response(null, { status: 204 });
});
