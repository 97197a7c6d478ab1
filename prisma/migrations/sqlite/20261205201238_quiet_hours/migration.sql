-- CreateTable
CREATE TABLE "QuietHours" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "start" TEXT NOT NULL,
    "end" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "zoneAttribute" TEXT NOT NULL,
    "defaultZone" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "QuietHours_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "QuietDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "bulk" BOOLEAN NOT NULL,
    "offsetBase" INTEGER NOT NULL,
    "instanceId" TEXT NOT NULL,
    "fromStep" TEXT,
    "step" TEXT NOT NULL,
    "enterAction" TEXT,
    "leaveAction" TEXT,
    "zone" TEXT NOT NULL,
    "users" BLOB NOT NULL,
    "count" INTEGER NOT NULL,
    "timeMs" BIGINT NOT NULL,
    "status" TEXT NOT NULL,
    "releaseAt" BIGINT NOT NULL,
    CONSTRAINT "QuietDelivery_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "QuietDelivery_destinationId_seq_idx" ON "QuietDelivery"("destinationId", "seq");

-- CreateIndex
CREATE INDEX "QuietDelivery_instanceId_step_idx" ON "QuietDelivery"("instanceId", "step");

-- CreateIndex
CREATE INDEX "QuietDelivery_status_releaseAt_idx" ON "QuietDelivery"("status", "releaseAt");
