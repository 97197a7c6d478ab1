-- CreateTable
CREATE TABLE "Tenant" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "partitions" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revokedAt" DATETIME,
    CONSTRAINT "ApiKey_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "Crowd" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "count" BIGINT NOT NULL,
    "sizeBytes" BIGINT NOT NULL,
    "bitmap" BLOB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "Profile" (
    "tenantId" TEXT NOT NULL,
    "user" BIGINT NOT NULL,
    "attributes" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "user")
);

-- CreateTable
CREATE TABLE "Workflow" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "currentVersion" INTEGER NOT NULL,
    "draft" TEXT NOT NULL,
    "schedule" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "WorkflowVersion" (
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("workflowId", "version")
);

-- CreateTable
CREATE TABLE "Instance" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "crowdName" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "userCount" BIGINT NOT NULL,
    "excludedCount" BIGINT NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" DATETIME,
    "stoppedAt" DATETIME
);

-- CreateTable
CREATE TABLE "InstanceSnapshot" (
    "instanceId" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "counts" TEXT NOT NULL,
    "bitmaps" BLOB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "ShardCheckpoint" (
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "data" BLOB NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("instanceId", "partition")
);

-- CreateTable
CREATE TABLE "EventLog" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL,
    "events" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "partition", "offset")
);

-- CreateTable
CREATE TABLE "PartitionState" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL DEFAULT 0,
    "owner" TEXT,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "leaseUntilMs" BIGINT NOT NULL DEFAULT 0,

    PRIMARY KEY ("tenantId", "partition")
);

-- CreateTable
CREATE TABLE "Journal" (
    "seq" BIGINT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "fromStep" TEXT,
    "toStep" TEXT NOT NULL,
    "user" BIGINT,
    "bitmap" BLOB,
    "count" BIGINT NOT NULL,
    "leaveAction" TEXT,
    "enterAction" TEXT,
    "timeMs" BIGINT NOT NULL
);

-- CreateTable
CREATE TABLE "Consumer" (
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "cursor" BIGINT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "name")
);

-- CreateTable
CREATE TABLE "Procedure" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" DATETIME
);

-- CreateTable
CREATE TABLE "ProcedureStep" (
    "procedureId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "state" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("procedureId", "step")
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
