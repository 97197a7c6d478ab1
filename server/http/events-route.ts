import { idempotencyKey } from '../engine';
import { json, readJsonBytes } from './respond';
import { callerRoute } from './request-context';

// POST /api/v1/events: served by the route file and by server/http/http-server.ts alike. It is the API's busiest call
// (every integration's events), and through Next.js each one paid the router, its tracing and a web-streams copy of
// the body: several times the CPU of taking the batch (BENCHMARKS.md, session 23).
// The body goes to the engine as the bytes it was sent as: decoded, validated by hand (server/engine/ingest.ts, one
// pass over up to 10,000 events) and appended where the engine runs, on its own thread, not the one answering requests.
export const postEvents = callerRoute(async ({ request, principal, engine, clock }) => {
  const key = idempotencyKey(request.headers.get('idempotency-key'));
  const result = await engine.ingestBody(principal, await readJsonBytes(request), clock.now(), key);
  // A retry under the same key gets the first answer again, marked as such (the convention Stripe's API uses).
  return json(
    { accepted: result.accepted, ...(result.duplicates > 0 ? { duplicates: result.duplicates } : {}) },
    202,
    result.replayed ? { 'idempotent-replayed': 'true' } : {},
  );
});
