-- CreateTable
CREATE TABLE "FrequencyCap" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "maxDeliveries" INTEGER NOT NULL,
    "windowMs" BIGINT NOT NULL,
    "destination" TEXT,
    "exempt" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "FrequencyCap_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "FrequencyCapWindow" (
    "capId" TEXT NOT NULL,
    "bucket" BIGINT NOT NULL,
    "levels" BLOB NOT NULL,
    "version" INTEGER NOT NULL,

    PRIMARY KEY ("capId", "bucket"),
    CONSTRAINT "FrequencyCapWindow_capId_fkey" FOREIGN KEY ("capId") REFERENCES "FrequencyCap" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "CappedDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "seq" BIGINT,
    "instanceId" TEXT NOT NULL,
    "step" TEXT NOT NULL,
    "users" BLOB NOT NULL,
    "count" INTEGER NOT NULL,
    "timeMs" BIGINT NOT NULL,
    CONSTRAINT "CappedDelivery_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE UNIQUE INDEX "FrequencyCap_tenantId_name_key" ON "FrequencyCap"("tenantId", "name");

-- CreateIndex
CREATE INDEX "CappedDelivery_destinationId_seq_idx" ON "CappedDelivery"("destinationId", "seq");

-- CreateIndex
CREATE INDEX "CappedDelivery_instanceId_step_idx" ON "CappedDelivery"("instanceId", "step");
