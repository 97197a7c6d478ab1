import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from './errors';
import { assertSameOriginWrite } from './security/csrf';
import { takeRequest, type TokenBucket } from './security/rate-limit';
import { parseScopes, requiredScope, type Scope } from './security/scopes';
import { liveSession, SESSION_COOKIE, startSession } from './security/sessions';
import type { Database } from './storage/database';
import type { Db } from './storage/db';

/** The admin signed in with the token itself or through a studio session (`session` is its id); or one API key. */
export type Principal = { kind: 'admin'; session?: string } | { kind: 'tenant'; tenantId: string; keyId: string; scopes?: readonly Scope[] };

export { SESSION_COOKIE };

/** Who did something, as the audit trail records it. */
export function actorOf(principal: Principal): string {
  if (principal.kind === 'tenant') return `key:${principal.keyId}`;
  return principal.session ? `admin:session:${principal.session}` : 'admin:token';
}

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

function configuredAdminToken(adminToken: string | undefined): string {
  if (!adminToken) throw new AppError('unauthorized', 'CROWDFLOW_ADMIN_TOKEN is not configured on the server');
  return adminToken;
}

/** Signs the studio in: checks `token` against the app's admin token (CROWDFLOW_ADMIN_TOKEN) and stores a new server-side session. */
export async function signIn(
  database: Database,
  adminToken: string | undefined,
  token: string,
  now: number,
): Promise<{ id: string; cookie: string; expiresAt: Date }> {
  if (!sameSecret(token, configuredAdminToken(adminToken))) throw new AppError('unauthorized', 'The admin token is not valid');
  return startSession(database, configuredAdminToken(adminToken), now);
}

export function readCookie(request: Request, name: string): string | undefined {
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

type KnownKey = { tenantId: string; keyId: string; revoked: boolean; scopes: Scope[] };
/** Keys by hash; cleared when this process revokes a key or deletes a tenant. */
export const apiKeys = (database: Database) => database.local.lookupCache<KnownKey>('api-keys');

/** What authenticating keeps between an app's requests, by API key id (AppState.security, owned by the app). */
export interface KeyUseMemory {
  /** Request rate-limit buckets (server/security/rate-limit.ts). */
  readonly buckets: Map<string, TokenBucket>;
  /** When the key's last use was written. */
  readonly keyUseWritten: Map<string, number>;
}

/**
 * Who is calling: the admin (`adminToken`, CROWDFLOW_ADMIN_TOKEN, or a studio session) or one tenant's API key, allowed
 * to make this call; keys and sessions are read from `database`, keys' rates and uses kept in `memory`.
 */
export async function authenticate(
  request: Request,
  database: Database,
  adminToken: string | undefined,
  memory: KeyUseMemory,
  /** The request's time by the app's clock: rate limits, key use and session expiry are reckoned by it. */
  now: number,
): Promise<Principal> {
  const header = request.headers.get('authorization');
  if (header) {
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match) throw new AppError('unauthorized', 'Authorization must be "Bearer <token>"');
    const secret = match[1];
    if (adminToken && sameSecret(secret, adminToken)) return { kind: 'admin' };
    const key = await findKey(database, secret);
    if (key.revoked) throw new AppError('unauthorized', 'This API key was revoked');
    await takeRequest(database, memory.buckets, key.tenantId, key.keyId, now);
    assertScope(request, key.scopes);
    noteKeyUse(database.db, memory.keyUseWritten, key.keyId, now);
    return { kind: 'tenant', tenantId: key.tenantId, keyId: key.keyId, scopes: key.scopes };
  }
  const cookie = readCookie(request, SESSION_COOKIE);
  if (cookie && adminToken) {
    const session = await liveSession(database, cookie, adminToken, now);
    if (!session) {
      throw new AppError(
        'unauthorized',
        'The studio session has ended (signed out, expired, or the admin token changed): sign in again, or send credentials as "Authorization: Bearer <token>"',
      );
    }
    assertSameOriginWrite(request);
    return { kind: 'admin', session: session.id };
  }
  throw new AppError('unauthorized', 'Missing credentials: send "Authorization: Bearer <admin token or API key>"');
}

async function findKey(database: Database, secret: string): Promise<KnownKey> {
  const hash = hashKey(secret);
  const cached = apiKeys(database).get(hash);
  if (cached) return cached;
  const row = await database.db.apiKey.findUnique({ where: { hash }, select: { id: true, tenantId: true, revokedAt: true, scopes: true } });
  if (!row) throw new AppError('unauthorized', 'The token is not a valid admin token or API key');
  const key = { tenantId: row.tenantId, keyId: row.id, revoked: row.revokedAt !== null, scopes: parseScopes(row.scopes) };
  apiKeys(database).set(hash, key);
  return key;
}

function assertScope(request: Request, scopes: readonly Scope[]): void {
  const path = new URL(request.url).pathname.replace(/^\/api\/v1/, '');
  const needed = requiredScope(request.method, path);
  if (needed === 'any') return;
  if (needed === 'admin') throw new AppError('forbidden', 'This call needs the admin token');
  if (!scopes.includes(needed)) {
    throw new AppError('forbidden', `This call needs an API key with the "${needed}" scope; this key has: ${scopes.join(', ') || 'none'}`, {
      requiredScope: needed,
    });
  }
}

/** Last use is written at most once a minute per key and process: a write per request would cost ingest its speed. */
const LAST_USED_EVERY_MS = 60_000;

function noteKeyUse(db: Db, lastUseMemory: Map<string, number>, keyId: string, now: number): void {
  if (now - (lastUseMemory.get(keyId) ?? 0) < LAST_USED_EVERY_MS) return;
  if (lastUseMemory.size > 100_000) lastUseMemory.clear();
  lastUseMemory.set(keyId, now);
  db.apiKey
    .updateMany({ where: { id: keyId }, data: { lastUsedAt: new Date(now) } })
    .catch((error: unknown) => console.error('[crowdflow] could not record an API key use', error));
}
