import { z } from 'zod';
import { createSession, SESSION_COOKIE } from '@/server/auth';
import { json, readJson, route } from '@/server/http/respond';

const SignInBody = z.strictObject({ token: z.string().min(1) });

export const POST = route(async (request) => {
  const { token } = await readJson(request, SignInBody);
  const session = createSession(token);
  const secure = new URL(request.url).protocol === 'https:' ? '; Secure' : '';
  return json({ signedIn: true }, 200, { 'set-cookie': `${SESSION_COOKIE}=${encodeURIComponent(session)}; Path=/; HttpOnly; SameSite=Lax; Max-Age=43200${secure}` });
});

export const DELETE = route(async () => json({ signedIn: false }, 200, { 'set-cookie': `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0` }));
