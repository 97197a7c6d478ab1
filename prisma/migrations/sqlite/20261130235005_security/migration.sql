-- AlterTable
ALTER TABLE "Tenant" ADD COLUMN "rateLimitBurst" INTEGER;
ALTER TABLE "Tenant" ADD COLUMN "rateLimitPerSecond" INTEGER;

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "hash" TEXT NOT NULL,
    "tokenMac" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,
    "revokedAt" DATETIME
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "tenantId" TEXT,
    "target" TEXT NOT NULL,
    "details" TEXT
);

-- AlterTable (columns with constant defaults can be added in place; no table redefinition)
ALTER TABLE "ApiKey" ADD COLUMN "scopes" TEXT NOT NULL DEFAULT 'ingest,read,manage';
ALTER TABLE "ApiKey" ADD COLUMN "createdBy" TEXT NOT NULL DEFAULT 'admin';
ALTER TABLE "ApiKey" ADD COLUMN "lastUsedAt" DATETIME;

-- CreateIndex
CREATE INDEX "ApiKey_createdBy_idx" ON "ApiKey"("createdBy");

-- CreateIndex
CREATE UNIQUE INDEX "Session_hash_key" ON "Session"("hash");

-- CreateIndex
CREATE INDEX "AuditEvent_tenantId_seq_idx" ON "AuditEvent"("tenantId", "seq");
