-- Scale-out on PostgreSQL (server/cluster/): live members, a tenant gathered for an instance operation, and the
-- per-partition counts owners publish for the other members.

-- CreateTable
CREATE TABLE "ClusterMember" (
    "name" TEXT NOT NULL,
    "lockKey" INTEGER NOT NULL,
    "draining" BOOLEAN NOT NULL DEFAULT false,
    "heartbeatMs" BIGINT NOT NULL,

    CONSTRAINT "ClusterMember_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "ClusterGather" (
    "tenantId" TEXT NOT NULL,
    "member" TEXT NOT NULL,
    "untilMs" BIGINT NOT NULL,

    CONSTRAINT "ClusterGather_pkey" PRIMARY KEY ("tenantId")
);

-- CreateTable
CREATE TABLE "ShardCounts" (
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "epoch" INTEGER NOT NULL,
    "version" BIGINT NOT NULL,
    "counts" TEXT NOT NULL,

    CONSTRAINT "ShardCounts_pkey" PRIMARY KEY ("tenantId", "instanceId", "partition")
);

-- AddForeignKey
ALTER TABLE "ClusterGather" ADD CONSTRAINT "ClusterGather_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ShardCounts" ADD CONSTRAINT "ShardCounts_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;
