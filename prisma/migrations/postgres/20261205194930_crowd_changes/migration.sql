-- CreateTable
CREATE TABLE "CrowdChange" (
    "id" SERIAL NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "timeMs" BIGINT NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "CrowdChange_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "CrowdChange_instanceId_partition_idx" ON "CrowdChange"("instanceId", "partition");

-- AddForeignKey
ALTER TABLE "CrowdChange" ADD CONSTRAINT "CrowdChange_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance"("id") ON DELETE CASCADE ON UPDATE CASCADE;
