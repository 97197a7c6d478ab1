import { z } from 'zod';
import { apiKeys, hashKey, newApiKeySecret, type Principal } from '../auth';
import { AppError, conflict, isUniqueViolation, notFound } from '../errors';
import { newId } from '../ids';
import { NAME_KINDS, nameSchema } from '../../core/model/names';
import type { Database } from '../storage/database';
import { DEFAULT_SCOPES, parseScopes, type Scope, SCOPE_MEANING, SCOPES } from '../security/scopes';
import { notifyTenantDeleted } from './changes';
import { dropProfileIndex } from '../profiles/index-store';
import { deleteTenantRows, revokeKeyTree } from '../storage/tenant-rows';

export const TenantName = nameSchema(NAME_KINDS.tenant);

export const CreateTenantBody = z.strictObject({
  name: TenantName,
  partitions: z.number().int().min(1).max(256).default(8),
});

export const CreateApiKeyBody = z.strictObject({
  name: nameSchema(NAME_KINDS.apiKey).default('default'),
  scopes: z
    .array(z.enum(SCOPES))
    .min(1)
    .max(SCOPES.length)
    .optional()
    .describe(`What the key may do (default ${DEFAULT_SCOPES.join(', ')}): ${SCOPES.map((s) => `${s} = ${SCOPE_MEANING[s]}`).join('; ')}`),
});

export type TenantView = { id: string; name: string; partitions: number; createdAt: string };
export type Tenant = { id: string; name: string; partitions: number; createdAt: Date };
/** A tenant as stored: also how its users map to its partitions (server/engine/partitioning.ts), an inner layout not shown. */
export type TenantRow = Tenant & { userBlock: number };

const view = (t: Tenant): TenantView => ({ id: t.id, name: t.name, partitions: t.partitions, createdAt: t.createdAt.toISOString() });

export const ACTIVE_INSTANCE_STATES = ['starting', 'running', 'stopping'];

export async function createTenant({ db }: Database, body: z.infer<typeof CreateTenantBody>): Promise<TenantView> {
  try {
    return view(await db.tenant.create({ data: { id: newId('tn'), name: body.name, partitions: body.partitions } }));
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict(`A tenant named "${body.name}" already exists`);
    throw error;
  }
}

export async function listTenants({ db }: Database, principal: Principal): Promise<TenantView[]> {
  const where = principal.kind === 'tenant' ? { id: principal.tenantId } : {};
  return (await db.tenant.findMany({ where, orderBy: { name: 'asc' } })).map(view);
}

/**
 * Whether a reference from a URL can name a stored row. PostgreSQL text cannot hold NUL (a query with one fails),
 * and no id or name we create has one, so such a reference is a 404 without a query.
 */
export function canNameRow(ref: string): boolean {
  return !ref.includes('\u0000');
}

/** Finds a tenant by id or name; a key of another tenant gets the same 404 as a tenant that does not exist. */
export async function findTenant(database: Database, principal: Principal, ref: string): Promise<TenantRow> {
  const tenant = canNameRow(ref) ? await lookupTenant(database, ref) : null;
  if (!tenant || (principal.kind === 'tenant' && principal.tenantId !== tenant.id)) throw notFound(`Tenant "${ref}"`);
  return tenant;
}

/**
 * The tenant a call acts on: an API key's own tenant (naming another one gets 404, like a tenant that does not
 * exist), or with the admin token the tenant named by `ref`, which is then required. Read from this thread's
 * database: its one caller, the engine's ingest, is not handed one yet.
 */
export async function callerTenant(database: Database, principal: Principal, ref: string | undefined): Promise<TenantRow> {
  if (principal.kind === 'admin') {
    if (ref === undefined) throw new AppError('validation_failed', 'tenant: required with the admin token (a tenant id or name)', { path: 'tenant' });
    return findTenant(database, principal, ref);
  }
  return findTenant(database, principal, ref ?? principal.tenantId);
}

/** Tenants by id or name; a tenant never changes after it is created, only its deletion clears the cache. */
const tenantsByRef = (database: Database) => database.local.lookupCache<TenantRow>('tenants');

async function lookupTenant(database: Database, ref: string): Promise<TenantRow | null> {
  const cached = tenantsByRef(database).get(ref);
  if (cached) return cached;
  const tenant = await database.db.tenant.findFirst({ where: { OR: [{ id: ref }, { name: ref }] } });
  if (tenant) tenantsByRef(database).set(ref, tenant);
  return tenant;
}

export function tenantView(tenant: Tenant): TenantView {
  return view(tenant);
}

/**
 * Deletes a tenant and everything it owns in one transaction (server/storage/tenant-rows.ts), refused while it has
 * active instances. Then the engine forgets the tenant (tenantDeleted), so no partition loop writes for it again.
 */
export async function deleteTenant(database: Database, tenant: Tenant): Promise<void> {
  const tenantId = tenant.id;
  const outcome = await deleteTenantRows(database, tenantId, ACTIVE_INSTANCE_STATES);
  if (outcome.kind === 'missing') throw notFound(`Tenant "${tenant.name}"`);
  if (outcome.kind === 'active') throw conflict(`Tenant "${tenant.name}" has ${outcome.instances} running instance(s); stop them before deleting the tenant`);
  notifyTenantDeleted(database, tenantId);
  dropProfileIndex(database, tenantId);
  tenantsByRef(database).clear();
  apiKeys(database).clear();
}

export type ApiKeyView = {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  createdBy: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

type ApiKeyRow = {
  id: string;
  name: string;
  prefix: string;
  scopes: string;
  createdBy: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

/**
 * Creates a key. The admin may give any scopes; a key (with the `keys` scope) only scopes it has itself, so a key
 * can never mint a more powerful one. `createdBy` records who made it: revoking that key revokes this one too.
 */
export async function createApiKey(
  { db }: Database,
  tenant: Tenant,
  principal: Principal,
  body: z.infer<typeof CreateApiKeyBody>,
): Promise<ApiKeyView & { secret: string }> {
  const scopes = SCOPES.filter((s) => (body.scopes ?? DEFAULT_SCOPES).includes(s));
  if (principal.kind === 'tenant') {
    const own = principal.scopes ?? [];
    const beyond = scopes.filter((s) => !own.includes(s));
    if (beyond.length > 0) throw new AppError('forbidden', `A key can only create keys with scopes it has itself; this key lacks: ${beyond.join(', ')}`);
  }
  const secret = newApiKeySecret();
  const key = await db.apiKey.create({
    data: {
      id: newId('key'),
      tenantId: tenant.id,
      name: body.name,
      prefix: secret.slice(0, 10),
      hash: hashKey(secret),
      scopes: scopes.join(','),
      createdBy: principal.kind === 'tenant' ? principal.keyId : 'admin',
    },
  });
  return { ...keyView(key), secret };
}

function keyView(k: ApiKeyRow): ApiKeyView {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: parseScopes(k.scopes),
    createdBy: k.createdBy,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}

export async function listApiKeys({ db }: Database, tenant: Tenant): Promise<ApiKeyView[]> {
  return (await db.apiKey.findMany({ where: { tenantId: tenant.id }, orderBy: { createdAt: 'asc' } })).map(keyView);
}

/** Revokes a key and every key it created, directly or through keys it created, in one transaction. */
export async function revokeApiKey(database: Database, tenant: Tenant, keyId: string, now: number): Promise<ApiKeyView & { alsoRevoked: string[] }> {
  const key = canNameRow(keyId) ? await database.db.apiKey.findFirst({ where: { id: keyId, tenantId: tenant.id } }) : null;
  if (!key) throw notFound(`API key "${keyId}"`);
  const descendants = await revokeKeyTree(database, tenant.id, key.id, new Date(now));
  apiKeys(database).clear();
  const revoked = await database.db.apiKey.findUniqueOrThrow({ where: { id: key.id } });
  return { ...keyView(revoked), alsoRevoked: descendants };
}

export function assertAdmin(principal: Principal): void {
  if (principal.kind !== 'admin') throw new AppError('forbidden', 'This call needs the admin token');
}
