-- CreateTable
CREATE TABLE "IngestRecord" (
    "tenantId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "key" TEXT,
    "requestHash" TEXT,
    "accepted" INTEGER NOT NULL,
    "duplicates" INTEGER NOT NULL,
    "eventIds" TEXT,
    "createdAtMs" BIGINT NOT NULL,

    PRIMARY KEY ("tenantId", "seq")
);

-- CreateIndex
CREATE INDEX "IngestRecord_tenantId_createdAtMs_idx" ON "IngestRecord"("tenantId", "createdAtMs");

-- CreateIndex
CREATE UNIQUE INDEX "IngestRecord_tenantId_key_key" ON "IngestRecord"("tenantId", "key");
