-- The per-key request rate limit moved into TenantLimits (requestsPerSecond, requestBurst).
-- AlterTable: dropped in place (SQLite ≥ 3.35), not by redefining Tenant, whose child tables would be cascaded.
ALTER TABLE "Tenant" DROP COLUMN "rateLimitBurst";
ALTER TABLE "Tenant" DROP COLUMN "rateLimitPerSecond";
