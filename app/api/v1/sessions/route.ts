import { authenticate } from '@/server/auth';
import { json, route } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { endAllSessions } from '@/server/security/sessions';
import { assertAdmin } from '@/server/tenants/tenants';
import { database } from '@/server/storage/database';

/** Signs every browser out (e.g. after a laptop was lost), without changing the admin token. */
export const DELETE = route(async (request) => {
  const principal = await authenticate(request);
  assertAdmin(principal);
  const ended = await endAllSessions(database());
  await audit(database(), principal, 'session.end_all', { target: 'studio', details: { ended } });
  return json({ ended });
});
