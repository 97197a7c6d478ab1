-- CreateTable
CREATE TABLE "ShardTimerPlan" (
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "cronNext" TEXT NOT NULL,

    PRIMARY KEY ("instanceId", "partition"),
    CONSTRAINT "ShardTimerPlan_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
