-- Users who reached a workflow's goal in one committed batch, by step (server/engine/store/conversions.ts).
CREATE TABLE "Conversion" (
    "id" SERIAL NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "step" TEXT NOT NULL,
    "bitmap" BYTEA NOT NULL,

    CONSTRAINT "Conversion_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "Conversion_instanceId_partition_idx" ON "Conversion"("instanceId", "partition");

ALTER TABLE "Conversion" ADD CONSTRAINT "Conversion_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance"("id") ON DELETE CASCADE ON UPDATE CASCADE;
