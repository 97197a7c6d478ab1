import { z } from 'zod';
import { readCookie, SESSION_COOKIE, signIn } from '@/server/auth';
import { AppError } from '@/server/errors';
import { openRoute } from '@/server/http/request-context';
import { json, readJson } from '@/server/http/respond';
import { audit } from '@/server/security/audit';
import { clientAddress, throttleKeyOf, trustedProxies } from '@/server/security/client-address';
import { endSession, SESSION_TTL_MS } from '@/server/security/sessions';

const SignInBody = z.strictObject({ token: z.string().min(1) });

/** Signs the studio in; failed attempts are throttled per client address and for the account (sign-in-throttle.ts). */
export const POST = openRoute(async ({ request, database, env, signInThrottle: throttle, clock }) => {
  const address = clientAddress(request, trustedProxies(env.CROWDFLOW_TRUSTED_PROXIES));
  const key = throttleKeyOf(address);
  throttle.check(key);
  const { token } = await readJson(request, SignInBody);
  const session = await signIn(database, env.CROWDFLOW_ADMIN_TOKEN, token, clock.now()).catch(async (error: unknown) => {
    if (error instanceof AppError && error.code === 'unauthorized') {
      throttle.failed(key);
      await audit(database, 'anonymous', 'session.sign_in_failed', { target: 'studio', details: { address } });
    }
    throw error;
  });
  throttle.succeeded(key);
  await audit(database, { kind: 'admin', session: session.id }, 'session.sign_in', { target: session.id, details: { address } });
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : '';
  const cookie = `${SESSION_COOKIE}=${session.cookie}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SESSION_TTL_MS / 1000}${secure}`;
  return json({ signedIn: true, expiresAt: session.expiresAt.toISOString() }, 200, { 'set-cookie': cookie });
});

/** Signs out: the session ends on the server (the old cookie no longer works anywhere), and the cookie is cleared. */
export const DELETE = openRoute(async ({ request, database, clock }) => {
  const cookie = readCookie(request, SESSION_COOKIE);
  const ended = cookie ? await endSession(database, cookie, clock.now()) : null;
  if (ended) await audit(database, { kind: 'admin', session: ended }, 'session.sign_out', { target: ended });
  return json({ signedIn: false }, 200, { 'set-cookie': `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0` });
});
