// Limits that protect the server from what one tenant sends, with documented defaults (docs/limits.md) that an
// administrator may override per tenant (PUT /api/v1/tenants/{tenant}/limits). Stored as a JSON object of the
// overridden fields only, so a default changed in a later release reaches every tenant that did not override it.
import { z } from 'zod';
import { AppError } from '../errors';
import type { Database } from '../storage/database';
import { readLimitOverrides, writeLimitOverrides } from '../storage/tenant-limits';

const LimitsShape = {
  maxCrowdUsers: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32)
    .describe('Users one crowd may hold (uploads and combinations)'),
  maxInstanceUsers: z
    .number()
    .int()
    .min(1)
    .max(2 ** 32)
    .describe('Users one instance may run over (start, crowd update)'),
  minTimerPeriodSeconds: z
    .number()
    .int()
    .min(1)
    .max(366 * 86_400)
    .describe('Shortest time between two firings of a timer step cron'),
  journalRetentionHours: z
    .number()
    .int()
    .min(1)
    .max(10 * 366 * 24)
    .describe('Notifications older than this are deleted'),
  journalMaxRows: z.number().int().min(1_000).max(1e12).describe('Notifications kept per tenant at most; the oldest beyond are deleted'),
  requestsPerSecond: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .describe("Requests per second each of the tenant's API keys may send (token bucket per server process; 429 past it)"),
  requestBurst: z.number().int().min(1).max(10_000_000).describe('Requests a key may send at once before the per-second rate applies'),
  maxProfileAttributes: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .describe(
      "Distinct attribute paths the tenant's profiles may hold (a nested key is a path of its own: address.city); a write that would add more is refused with 422 too_many_attributes",
    ),
  maxIndexedValuesPerAttribute: z
    .number()
    .int()
    .min(1)
    .max(1_000_000)
    .describe(
      'Distinct string values of one attribute that get an equality bitmap each; past it the attribute is still stored and queried, its equality checks scan the users holding it',
    ),
  webhookPrivateAddresses: z
    .boolean()
    .describe('Whether webhook destinations may be private, loopback or link-local addresses (refused by default: server/webhooks/address-policy.ts)'),
};

export const TenantLimits = z.strictObject(LimitsShape);
export type TenantLimits = z.infer<typeof TenantLimits>;

/** Body of PUT …/limits: the fields to override; null puts a field back to its default. */
export const TenantLimitsPatch = z.strictObject(
  Object.fromEntries(Object.entries(LimitsShape).map(([key, schema]) => [key, schema.nullable().optional()])) as {
    [K in keyof TenantLimits]: z.ZodOptional<z.ZodNullable<(typeof LimitsShape)[K]>>;
  },
);

/**
 * Defaults: a 100M-user crowd and instance fit (about 60 MB of bitmap at 0.57 bytes a user, measured), far below
 * what a 2^32-user upload would cost; timers fire at most once a minute; the journal keeps 7 days and at most 50M
 * notifications per tenant (a cron moving 1M users every second added ~2 MB/s without a bound). Each API key may send
 * 2,000 requests/s (burst 4,000), far above what the benchmarks send (≈ 170 event batches/s, ≈ 1,000 counts reads/s).
 * Profiles: 500 attribute paths, each with equality bitmaps for up to 1,000 distinct strings (a country, a plan, a
 * city list; e-mails and IDs go past it and are scanned). An attribute path costs ~3-4 KB of index even for one user
 * and an indexed value ~0.7 KB (measured): 100,000 paths from one 3 MB request grew the server by ~440 MB, while at the
 * defaults' very worst (every attribute at its value cap, one user a value) a tenant's index grew it by 300-360 MB.
 */
export const DEFAULT_LIMITS: TenantLimits = Object.freeze({
  maxCrowdUsers: 100_000_000,
  maxInstanceUsers: 100_000_000,
  minTimerPeriodSeconds: 60,
  journalRetentionHours: 7 * 24,
  journalMaxRows: 50_000_000,
  requestsPerSecond: 2_000,
  requestBurst: 4_000,
  maxProfileAttributes: 500,
  maxIndexedValuesPerAttribute: 1_000,
  webhookPrivateAddresses: false,
});

async function overrides(database: Database, tenantId: string): Promise<Partial<TenantLimits>> {
  const stored = await readLimitOverrides(database, tenantId);
  return stored === undefined ? {} : (JSON.parse(stored) as Partial<TenantLimits>);
}

/** The tenant's limits: its overrides over the defaults. */
export async function tenantLimits(database: Database, tenantId: string): Promise<TenantLimits> {
  return { ...DEFAULT_LIMITS, ...(await overrides(database, tenantId)) };
}

/** Applies a patch (null = back to the default) and returns the limits now in force. */
export async function updateTenantLimits(database: Database, tenantId: string, patch: z.infer<typeof TenantLimitsPatch>): Promise<TenantLimits> {
  const next: Record<string, unknown> = { ...(await overrides(database, tenantId)) };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  await writeLimitOverrides(database, tenantId, JSON.stringify(next));
  database.local.lookupCache('tenant-limits').clear();
  return { ...DEFAULT_LIMITS, ...next };
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * The most users an upload of at most `maxUploadBytes` may become: what a text upload of that size can name (an ID
 * and a newline are at least 2 bytes), so the upload cap bounds what an upload becomes, not only its bytes.
 */
function usersPerUploadCap(maxUploadBytes: number): number {
  return Math.floor(maxUploadBytes / 2);
}

/** Refuses (413, naming the limit) a crowd of `users` users for this tenant and, for an upload, the upload cap. */
export function checkCrowdUsers(users: number, limits: TenantLimits, maxUploadBytes?: number): void {
  if (users > limits.maxCrowdUsers) {
    throw new AppError(
      'payload_too_large',
      `The crowd would hold ${count(users)} users; this tenant's crowds may hold at most ${count(limits.maxCrowdUsers)} (limit maxCrowdUsers)`,
      {
        limit: 'maxCrowdUsers',
        value: limits.maxCrowdUsers,
        users,
      },
    );
  }
  if (maxUploadBytes === undefined) return;
  const cap = usersPerUploadCap(maxUploadBytes);
  if (users > cap) {
    throw new AppError(
      'payload_too_large',
      `The upload would become ${count(users)} users; an upload of at most ${count(maxUploadBytes)} bytes (CROWDFLOW_MAX_UPLOAD_BYTES) may become at most ${count(cap)} users`,
      { limit: 'CROWDFLOW_MAX_UPLOAD_BYTES', value: maxUploadBytes, users },
    );
  }
}

/** Refuses (422, naming the limit) an instance over `users` users. */
export function checkInstanceUsers(users: number, limits: TenantLimits): void {
  if (users > limits.maxInstanceUsers) {
    throw new AppError(
      'unprocessable',
      `The instance would run over ${count(users)} users; this tenant's instances may hold at most ${count(limits.maxInstanceUsers)} (limit maxInstanceUsers)`,
      {
        limit: 'maxInstanceUsers',
        value: limits.maxInstanceUsers,
        users,
      },
    );
  }
}
