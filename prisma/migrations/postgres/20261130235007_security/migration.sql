-- AlterTable
ALTER TABLE "Tenant" ADD COLUMN     "rateLimitBurst" INTEGER,
ADD COLUMN     "rateLimitPerSecond" INTEGER;

-- AlterTable
ALTER TABLE "ApiKey" ADD COLUMN     "createdBy" TEXT NOT NULL DEFAULT 'admin',
ADD COLUMN     "lastUsedAt" TIMESTAMP(3),
ADD COLUMN     "scopes" TEXT NOT NULL DEFAULT 'ingest,read,manage';

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "tokenMac" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "seq" SERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "tenantId" TEXT,
    "target" TEXT NOT NULL,
    "details" TEXT,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE UNIQUE INDEX "Session_hash_key" ON "Session"("hash");

-- CreateIndex
CREATE INDEX "AuditEvent_tenantId_seq_idx" ON "AuditEvent"("tenantId", "seq");

-- CreateIndex
CREATE INDEX "ApiKey_createdBy_idx" ON "ApiKey"("createdBy");
