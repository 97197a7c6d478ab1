import { authenticate } from '@/server/auth';
import { getEngine, idempotencyKey, ingest } from '@/server/engine';
import { json, readJsonBody, route } from '@/server/http/respond';

// The body is validated by hand in server/engine/ingest.ts (one pass over up to 10,000 events), not by zod.
export const POST = route(async (request) => {
  const principal = await authenticate(request);
  const key = idempotencyKey(request.headers.get('idempotency-key'));
  const body = await readJsonBody(request);
  const result = await ingest(principal, body.value, Date.now(), key, body.bytes);
  if (!result.replayed) getEngine().wakeTenant(result.tenantId);
  // A retry under the same key gets the first answer again, marked as such (the convention Stripe's API uses).
  return json({ accepted: result.accepted, ...(result.duplicates > 0 ? { duplicates: result.duplicates } : {}) }, 202, result.replayed ? { 'idempotent-replayed': 'true' } : {});
});
