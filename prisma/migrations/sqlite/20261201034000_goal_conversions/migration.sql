-- Users who reached a workflow's goal in one committed batch, by step (server/engine/store/conversions.ts).
CREATE TABLE "Conversion" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "step" TEXT NOT NULL,
    "bitmap" BLOB NOT NULL,
    CONSTRAINT "Conversion_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX "Conversion_instanceId_partition_idx" ON "Conversion"("instanceId", "partition");
