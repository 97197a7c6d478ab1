-- CreateTable
CREATE TABLE "DeadLetter" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "step" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "logOffset" BIGINT NOT NULL,
    "eventIndex" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "TenantLimits" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "limits" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "DeadLetter_tenantId_createdAt_idx" ON "DeadLetter"("tenantId", "createdAt");
