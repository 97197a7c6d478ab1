// Per-key request rate limits: a token bucket per API key in each server process, sized by the tenant's limits
// (`requestsPerSecond`, `requestBurst`: server/limits/limits.ts, changed with PUT /tenants/T/limits). The admin token
// is not limited.
import { AppError } from '../errors';
import { tenantLimits, type TenantLimits } from '../limits/limits';
import type { Database } from '../storage/database';

export type RateLimit = { perSecond: number; burst: number };
export type TokenBucket = { tokens: number; updatedMs: number; limit: RateLimit };

/** Cleared by updateTenantLimits in this process; other processes see a change within 5 s. */
const limitsByTenant = (database: Database) => database.local.lookupCache<TenantLimits>('tenant-limits');

async function limitOf(database: Database, tenantId: string): Promise<RateLimit> {
  let limits = limitsByTenant(database).get(tenantId);
  if (!limits) {
    limits = await tenantLimits(database, tenantId);
    limitsByTenant(database).set(tenantId, limits);
  }
  return { perSecond: limits.requestsPerSecond, burst: limits.requestBurst };
}

/** Adds the tokens the bucket earned since it was last brought up to date, up to its burst. */
export function refill(bucket: TokenBucket, now: number): void {
  bucket.tokens = Math.min(bucket.limit.burst, bucket.tokens + (Math.max(0, now - bucket.updatedMs) * bucket.limit.perSecond) / 1000);
  bucket.updatedMs = now;
}

/** Whole seconds (at least 1) until a bucket short of a token has one again: the Retry-After of a 429. */
export function secondsUntilToken(bucket: TokenBucket): number {
  return Math.max(1, Math.ceil((1 - bucket.tokens) / bucket.limit.perSecond));
}

/** Takes one request from the key's bucket among `buckets` (the app's, by key id), or throws a 429 saying when to retry. */
export async function takeRequest(database: Database, buckets: Map<string, TokenBucket>, tenantId: string, keyId: string, now = Date.now()): Promise<void> {
  const limit = await limitOf(database, tenantId);
  let bucket = buckets.get(keyId);
  if (!bucket || bucket.limit.perSecond !== limit.perSecond || bucket.limit.burst !== limit.burst) {
    bucket = { tokens: limit.burst, updatedMs: now, limit };
    if (buckets.size > 100_000) buckets.clear();
    buckets.set(keyId, bucket);
  }
  refill(bucket, now);
  if (bucket.tokens >= 1) {
    bucket.tokens -= 1;
    return;
  }
  const retryAfterSeconds = secondsUntilToken(bucket);
  throw new AppError(
    'rate_limited',
    `This API key sent more than ${limit.perSecond} requests per second (burst ${limit.burst}); retry in ${retryAfterSeconds} s`,
    { retryAfterSeconds, perSecond: limit.perSecond, burst: limit.burst },
  );
}
