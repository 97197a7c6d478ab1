import { json } from '@/server/http/respond';
import { endAllSessions } from '@/server/security/sessions';
import { adminRoute } from '@/server/http/request-context';

/** Signs every browser out (e.g. after a laptop was lost), without changing the admin token. */
export const DELETE = adminRoute(async ({ database, clock, audit }) => {
  const ended = await endAllSessions(database, clock.now());
  await audit('session.end_all', { target: 'studio', details: { ended } });
  return json({ ended });
});
