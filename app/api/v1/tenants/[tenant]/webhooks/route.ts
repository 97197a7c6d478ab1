import { json, readJson } from '@/server/http/respond';
import { createDestination, CreateDestinationBody, listDestinations } from '@/server/webhooks/destinations';
import { tenantRoute } from '@/server/http/request-context';

export const GET = tenantRoute<{ tenant: string }>(async ({ tenant, database }) => {
  return json({ destinations: await listDestinations(database, tenant.id) });
});

/** 201 with the destination; `secret` only when it was generated (shown this once). */
export const POST = tenantRoute<{ tenant: string }>(async ({ tenant, request, database, env, clock, audit }) => {
  const body = await readJson(request, CreateDestinationBody);
  const { destination, secret } = await createDestination(database, tenant.id, body, clock.now(), env.CROWDFLOW_WEBHOOK_ALLOW_PRIVATE);
  await audit('webhook.create', {
    target: destination.name,
    details: { url: destination.url, allNotifications: destination.allNotifications },
  });
  return json({ ...destination, ...(secret ? { secret } : {}) }, 201);
});
