import { z } from 'zod';
import { authenticate } from '@/server/auth';
import { getEngine } from '@/server/engine';
import { ingest } from '@/server/engine/ingest';
import { json, readJson, route } from '@/server/http/respond';

// The body is validated by hand in server/engine/ingest.ts (one pass over up to 10,000 events), not by zod.
export const POST = route(async (request) => {
  const principal = await authenticate(request);
  const { tenantId, accepted } = await ingest(principal, await readJson(request, z.unknown()), Date.now());
  getEngine().wakeTenant(tenantId);
  return json({ accepted }, 202);
});
