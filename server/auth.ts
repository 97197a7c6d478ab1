import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { env } from './env';
import { AppError } from './errors';
import { lookupCache } from './lookup-cache';
import { db } from './storage/db';

export type Principal = { kind: 'admin' } | { kind: 'tenant'; tenantId: string; keyId: string };

export const SESSION_COOKIE = 'cf_session';
const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function newApiKeySecret(): string {
  return `cfk_${randomBytes(24).toString('base64url')}`;
}

function sameSecret(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}

function adminToken(): string {
  const token = env().CROWDFLOW_ADMIN_TOKEN;
  if (!token) throw new AppError('unauthorized', 'CROWDFLOW_ADMIN_TOKEN is not configured on the server');
  return token;
}

/** A studio session: `expiry.signature`, signed with the admin token so rotating the token ends every session. */
export function createSession(token: string, now = Date.now()): string {
  if (!sameSecret(token, adminToken())) throw new AppError('unauthorized', 'The admin token is not valid');
  const expiry = String(now + SESSION_TTL_MS);
  return `${expiry}.${createHmac('sha256', adminToken()).update(expiry).digest('base64url')}`;
}

function validSession(value: string, now = Date.now()): boolean {
  const [expiry, signature] = value.split('.');
  if (!expiry || !signature || Number(expiry) < now) return false;
  return sameSecret(signature, createHmac('sha256', adminToken()).update(expiry).digest('base64url'));
}

function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key !== name) continue;
    try {
      return decodeURIComponent(rest.join('='));
    } catch {
      throw new AppError('unauthorized', `The ${name} cookie is malformed (a bad percent-escape); sign in again`);
    }
  }
  return undefined;
}

type KnownKey = { tenantId: string; keyId: string; revoked: boolean };
/** Keys by hash; cleared when this process revokes a key or deletes a tenant. */
export const apiKeys = () => lookupCache<KnownKey>('api-keys');

/** Who is calling: the admin (token or studio session) or one tenant's API key. */
export async function authenticate(request: Request): Promise<Principal> {
  const header = request.headers.get('authorization');
  if (header) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new AppError('unauthorized', 'Authorization must be "Bearer <token>"');
    const secret = match[1];
    if (env().CROWDFLOW_ADMIN_TOKEN && sameSecret(secret, adminToken())) return { kind: 'admin' };
    const hash = hashKey(secret);
    let key = apiKeys().get(hash);
    if (!key) {
      const row = await db().apiKey.findUnique({ where: { hash }, select: { id: true, tenantId: true, revokedAt: true } });
      if (!row) throw new AppError('unauthorized', 'The token is not a valid admin token or API key');
      key = { tenantId: row.tenantId, keyId: row.id, revoked: row.revokedAt !== null };
      apiKeys().set(hash, key);
    }
    if (key.revoked) throw new AppError('unauthorized', 'This API key was revoked');
    return { kind: 'tenant', tenantId: key.tenantId, keyId: key.keyId };
  }
  const session = readCookie(request, SESSION_COOKIE);
  if (session && env().CROWDFLOW_ADMIN_TOKEN && validSession(session)) return { kind: 'admin' };
  throw new AppError('unauthorized', 'Missing credentials: send "Authorization: Bearer <admin token or API key>"');
}

export async function requireAdmin(request: Request): Promise<void> {
  const principal = await authenticate(request);
  if (principal.kind !== 'admin') throw new AppError('forbidden', 'This call needs the admin token');
}
