// Studio sessions, kept server-side: the cookie carries a random secret, the Session row its SHA-256 hash, when it
// expires and whether it was revoked, and an HMAC of the admin token keyed by the secret. Sign-out revokes the row and
// a new admin token no longer matches the HMAC, so either ends the session on every server process at once (each
// request reads the row: no cache). The database alone can neither forge a cookie nor test guesses of the token.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { newId } from '../ids';
import type { Database } from '../storage/database';

export const SESSION_COOKIE = 'cf_session';
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Rows of sessions that ended this long ago are deleted at the next sign-in. */
const KEEP_ENDED_MS = 24 * 60 * 60 * 1000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const tokenMac = (secret: string, adminToken: string) => createHmac('sha256', secret).update(adminToken).digest('hex');

export type SessionRef = { id: string };

/** Stores a new session for an admin token the caller has already checked; returns the cookie value. */
export async function startSession({ db }: Database, adminToken: string, now = Date.now()): Promise<{ id: string; cookie: string; expiresAt: Date }> {
  const secret = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now + SESSION_TTL_MS);
  const id = newId('ses');
  await db.session.deleteMany({ where: { expiresAt: { lt: new Date(now - KEEP_ENDED_MS) } } });
  await db.session.create({ data: { id, hash: sha256(secret), tokenMac: tokenMac(secret, adminToken), expiresAt } });
  return { id, cookie: secret, expiresAt };
}

/** The live session a cookie value names, or null (unknown, expired, signed out, or made with another admin token). */
export async function liveSession({ db }: Database, cookie: string, adminToken: string, now = Date.now()): Promise<SessionRef | null> {
  if (cookie.length === 0 || cookie.length > 200) return null;
  const row = await db.session.findUnique({ where: { hash: sha256(cookie) } });
  if (!row || row.revokedAt !== null || row.expiresAt.getTime() <= now) return null;
  const expected = Buffer.from(tokenMac(cookie, adminToken));
  const stored = Buffer.from(row.tokenMac);
  if (expected.length !== stored.length || !timingSafeEqual(expected, stored)) return null;
  return { id: row.id };
}

/** Ends every live session (the admin's "sign out everywhere"); returns how many there were. */
export async function endAllSessions({ db }: Database, now = Date.now()): Promise<number> {
  return (await db.session.updateMany({ where: { revokedAt: null, expiresAt: { gt: new Date(now) } }, data: { revokedAt: new Date(now) } })).count;
}

/** Ends the session a cookie value names (sign-out); returns its id when there was one. */
export async function endSession({ db }: Database, cookie: string, now = Date.now()): Promise<string | null> {
  if (cookie.length === 0 || cookie.length > 200) return null;
  const row = await db.session.findUnique({ where: { hash: sha256(cookie) }, select: { id: true, revokedAt: true } });
  if (!row) return null;
  if (row.revokedAt === null) await db.session.update({ where: { id: row.id }, data: { revokedAt: new Date(now) } });
  return row.id;
}
