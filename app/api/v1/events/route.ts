import { authenticate } from '@/server/auth';
import { getEngine, idempotencyKey } from '@/server/engine';
import { json, readJsonBytes, route } from '@/server/http/respond';

// The body goes to the engine as the bytes it was sent as: decoded, validated by hand (server/engine/ingest.ts, one
// pass over up to 10,000 events) and appended where the engine runs, on its own thread, not the one answering requests.
export const POST = route(async (request) => {
  const principal = await authenticate(request);
  const key = idempotencyKey(request.headers.get('idempotency-key'));
  const result = await getEngine().ingestBody(principal, await readJsonBytes(request), Date.now(), key);
  // A retry under the same key gets the first answer again, marked as such (the convention Stripe's API uses).
  return json(
    { accepted: result.accepted, ...(result.duplicates > 0 ? { duplicates: result.duplicates } : {}) },
    202,
    result.replayed ? { 'idempotent-replayed': 'true' } : {},
  );
});
