-- CreateTable
CREATE TABLE "CrowdChange" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "timeMs" BIGINT NOT NULL,
    "data" BLOB NOT NULL,
    CONSTRAINT "CrowdChange_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "CrowdChange_instanceId_partition_idx" ON "CrowdChange"("instanceId", "partition");
