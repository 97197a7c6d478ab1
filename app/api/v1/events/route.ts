import { idempotencyKey } from '@/server/engine';
import { json, readJsonBytes } from '@/server/http/respond';
import { callerRoute } from '@/server/http/request-context';

// The body goes to the engine as the bytes it was sent as: decoded, validated by hand (server/engine/ingest.ts, one
// pass over up to 10,000 events) and appended where the engine runs, on its own thread, not the one answering requests.
export const POST = callerRoute(async ({ request, principal, engine }) => {
  const key = idempotencyKey(request.headers.get('idempotency-key'));
  const result = await engine.ingestBody(principal, await readJsonBytes(request), Date.now(), key);
  // A retry under the same key gets the first answer again, marked as such (the convention Stripe's API uses).
  return json(
    { accepted: result.accepted, ...(result.duplicates > 0 ? { duplicates: result.duplicates } : {}) },
    202,
    result.replayed ? { 'idempotent-replayed': 'true' } : {},
  );
});
