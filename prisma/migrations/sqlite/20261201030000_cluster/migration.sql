-- Scale-out on PostgreSQL (server/cluster/): the same tables as there, unused on SQLite (one process).

-- CreateTable
CREATE TABLE "ClusterMember" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "lockKey" INTEGER NOT NULL,
    "draining" BOOLEAN NOT NULL DEFAULT false,
    "heartbeatMs" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "ClusterGather" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "member" TEXT NOT NULL,
    "untilMs" BIGINT NOT NULL,
    CONSTRAINT "ClusterGather_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "ShardCounts" (
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "epoch" INTEGER NOT NULL,
    "version" BIGINT NOT NULL,
    "counts" TEXT NOT NULL,

    PRIMARY KEY ("tenantId", "instanceId", "partition"),
    CONSTRAINT "ShardCounts_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
