-- The per-key request rate limit moved into TenantLimits (requestsPerSecond, requestBurst).
-- AlterTable
ALTER TABLE "Tenant" DROP COLUMN "rateLimitBurst",
DROP COLUMN "rateLimitPerSecond";
