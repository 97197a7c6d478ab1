-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Tenant" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "partitions" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Tenant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Crowd" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "count" BIGINT NOT NULL,
    "sizeBytes" BIGINT NOT NULL,
    "bitmap" BYTEA NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Crowd_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Profile" (
    "tenantId" TEXT NOT NULL,
    "user" BIGINT NOT NULL,
    "attributes" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Profile_pkey" PRIMARY KEY ("tenantId","user")
);

-- CreateTable
CREATE TABLE "Workflow" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "currentVersion" INTEGER NOT NULL,
    "draft" TEXT NOT NULL,
    "schedule" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Workflow_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "WorkflowVersion" (
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WorkflowVersion_pkey" PRIMARY KEY ("workflowId","version")
);

-- CreateTable
CREATE TABLE "Instance" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "crowdName" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "userCount" BIGINT NOT NULL,
    "excludedCount" BIGINT NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "stoppedAt" TIMESTAMP(3),

    CONSTRAINT "Instance_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "InstanceSnapshot" (
    "instanceId" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "counts" TEXT NOT NULL,
    "bitmaps" BYTEA NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "InstanceSnapshot_pkey" PRIMARY KEY ("instanceId")
);

-- CreateTable
CREATE TABLE "ShardCheckpoint" (
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "data" BYTEA NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ShardCheckpoint_pkey" PRIMARY KEY ("instanceId","partition")
);

-- CreateTable
CREATE TABLE "EventLog" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL,
    "events" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "EventLog_pkey" PRIMARY KEY ("tenantId","partition","offset")
);

-- CreateTable
CREATE TABLE "PartitionState" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL DEFAULT 0,
    "owner" TEXT,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "leaseUntilMs" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "PartitionState_pkey" PRIMARY KEY ("tenantId","partition")
);

-- CreateTable
CREATE TABLE "Journal" (
    "seq" BIGINT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "fromStep" TEXT,
    "toStep" TEXT NOT NULL,
    "user" BIGINT,
    "bitmap" BYTEA,
    "count" BIGINT NOT NULL,
    "leaveAction" TEXT,
    "enterAction" TEXT,
    "timeMs" BIGINT NOT NULL,

    CONSTRAINT "Journal_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "Consumer" (
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "cursor" BIGINT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Consumer_pkey" PRIMARY KEY ("tenantId","name")
);

-- CreateTable
CREATE TABLE "Procedure" (
    "id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "parentId" TEXT,
    "tenantId" TEXT,
    "workflowId" TEXT,
    "lockKeys" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "step" INTEGER NOT NULL DEFAULT 0,
    "data" TEXT NOT NULL,
    "output" TEXT,
    "error" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextRunMs" BIGINT NOT NULL DEFAULT 0,
    "owner" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Procedure_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ProcedureStep" (
    "procedureId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProcedureStep_pkey" PRIMARY KEY ("procedureId","step")
);

-- CreateIndex
CREATE UNIQUE INDEX "Tenant_name_key" ON "Tenant"("name");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_hash_key" ON "ApiKey"("hash");

-- CreateIndex
CREATE INDEX "ApiKey_tenantId_idx" ON "ApiKey"("tenantId");

-- CreateIndex
CREATE UNIQUE INDEX "Crowd_tenantId_name_key" ON "Crowd"("tenantId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Workflow_tenantId_name_key" ON "Workflow"("tenantId", "name");

-- CreateIndex
CREATE INDEX "Instance_tenantId_state_idx" ON "Instance"("tenantId", "state");

-- CreateIndex
CREATE INDEX "Instance_workflowId_idx" ON "Instance"("workflowId");

-- CreateIndex
CREATE INDEX "InstanceSnapshot_tenantId_idx" ON "InstanceSnapshot"("tenantId");

-- CreateIndex
CREATE INDEX "Journal_tenantId_seq_idx" ON "Journal"("tenantId", "seq");

-- CreateIndex
CREATE INDEX "Journal_instanceId_partition_seq_idx" ON "Journal"("instanceId", "partition", "seq");

-- CreateIndex
CREATE INDEX "Procedure_state_idx" ON "Procedure"("state");

-- CreateIndex
CREATE INDEX "Procedure_parentId_idx" ON "Procedure"("parentId");

-- CreateIndex
CREATE INDEX "Procedure_workflowId_idx" ON "Procedure"("workflowId");

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;
