-- Rows left by tenants deleted before this migration (a live engine could write a partition's lease row again
-- after its tenant was deleted): every row must belong to an existing tenant before the foreign keys exist.
DELETE FROM "Crowd" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "Profile" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "ProfileIndexState" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "Workflow" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "Instance" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "InstanceSnapshot" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "EventLog" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "IngestRecord" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "PartitionState" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "Consumer" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "DeadLetter" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "TenantLimits" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "JournalTrim" WHERE "tenantId" NOT IN (SELECT "id" FROM "Tenant");
DELETE FROM "WorkflowVersion" WHERE "workflowId" NOT IN (SELECT "id" FROM "Workflow");
DELETE FROM "ShardCheckpoint" WHERE "instanceId" NOT IN (SELECT "id" FROM "Instance");

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Tenant" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "partitions" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO "new_Tenant" ("createdAt", "id", "name", "partitions") SELECT "createdAt", "id", "name", "partitions" FROM "Tenant";
DROP TABLE "Tenant";
ALTER TABLE "new_Tenant" RENAME TO "Tenant";
CREATE UNIQUE INDEX "Tenant_name_key" ON "Tenant"("name");
CREATE TABLE "new_Crowd" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "count" BIGINT NOT NULL,
    "sizeBytes" BIGINT NOT NULL,
    "bitmap" BLOB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Crowd_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Crowd" ("bitmap", "count", "createdAt", "id", "name", "sizeBytes", "tenantId", "updatedAt") SELECT "bitmap", "count", "createdAt", "id", "name", "sizeBytes", "tenantId", "updatedAt" FROM "Crowd";
DROP TABLE "Crowd";
ALTER TABLE "new_Crowd" RENAME TO "Crowd";
CREATE UNIQUE INDEX "Crowd_tenantId_name_key" ON "Crowd"("tenantId", "name");
CREATE TABLE "new_Profile" (
    "tenantId" TEXT NOT NULL,
    "user" BIGINT NOT NULL,
    "attributes" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "user"),
    CONSTRAINT "Profile_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Profile" ("attributes", "tenantId", "updatedAt", "user") SELECT "attributes", "tenantId", "updatedAt", "user" FROM "Profile";
DROP TABLE "Profile";
ALTER TABLE "new_Profile" RENAME TO "Profile";
CREATE TABLE "new_ProfileIndexState" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "snapshotSeq" BIGINT NOT NULL DEFAULT -1,
    "snapshot" BLOB,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "ProfileIndexState_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ProfileIndexState" ("seq", "snapshot", "snapshotSeq", "tenantId", "updatedAt") SELECT "seq", "snapshot", "snapshotSeq", "tenantId", "updatedAt" FROM "ProfileIndexState";
DROP TABLE "ProfileIndexState";
ALTER TABLE "new_ProfileIndexState" RENAME TO "ProfileIndexState";
CREATE TABLE "new_Workflow" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "currentVersion" INTEGER NOT NULL,
    "draft" TEXT NOT NULL,
    "schedule" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "Workflow_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Workflow" ("createdAt", "currentVersion", "draft", "id", "name", "schedule", "tenantId", "updatedAt") SELECT "createdAt", "currentVersion", "draft", "id", "name", "schedule", "tenantId", "updatedAt" FROM "Workflow";
DROP TABLE "Workflow";
ALTER TABLE "new_Workflow" RENAME TO "Workflow";
CREATE UNIQUE INDEX "Workflow_tenantId_name_key" ON "Workflow"("tenantId", "name");
CREATE TABLE "new_WorkflowVersion" (
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("workflowId", "version"),
    CONSTRAINT "WorkflowVersion_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_WorkflowVersion" ("createdAt", "definition", "version", "workflowId") SELECT "createdAt", "definition", "version", "workflowId" FROM "WorkflowVersion";
DROP TABLE "WorkflowVersion";
ALTER TABLE "new_WorkflowVersion" RENAME TO "WorkflowVersion";
CREATE TABLE "new_Instance" (
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
    "stoppedAt" DATETIME,
    CONSTRAINT "Instance_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Instance" ("createdAt", "crowdName", "excludedCount", "id", "startedAt", "state", "stoppedAt", "tenantId", "userCount", "version", "workflowId") SELECT "createdAt", "crowdName", "excludedCount", "id", "startedAt", "state", "stoppedAt", "tenantId", "userCount", "version", "workflowId" FROM "Instance";
DROP TABLE "Instance";
ALTER TABLE "new_Instance" RENAME TO "Instance";
CREATE INDEX "Instance_tenantId_state_idx" ON "Instance"("tenantId", "state");
CREATE INDEX "Instance_workflowId_idx" ON "Instance"("workflowId");
CREATE TABLE "new_InstanceSnapshot" (
    "instanceId" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "counts" TEXT NOT NULL,
    "bitmaps" BLOB NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,
    CONSTRAINT "InstanceSnapshot_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_InstanceSnapshot" ("bitmaps", "counts", "createdAt", "expiresAt", "instanceId", "tenantId") SELECT "bitmaps", "counts", "createdAt", "expiresAt", "instanceId", "tenantId" FROM "InstanceSnapshot";
DROP TABLE "InstanceSnapshot";
ALTER TABLE "new_InstanceSnapshot" RENAME TO "InstanceSnapshot";
CREATE INDEX "InstanceSnapshot_tenantId_idx" ON "InstanceSnapshot"("tenantId");
CREATE TABLE "new_ShardCheckpoint" (
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "data" BLOB NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("instanceId", "partition"),
    CONSTRAINT "ShardCheckpoint_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ShardCheckpoint" ("data", "instanceId", "journalSeq", "partition", "updatedAt") SELECT "data", "instanceId", "journalSeq", "partition", "updatedAt" FROM "ShardCheckpoint";
DROP TABLE "ShardCheckpoint";
ALTER TABLE "new_ShardCheckpoint" RENAME TO "ShardCheckpoint";
CREATE TABLE "new_EventLog" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL,
    "events" BLOB NOT NULL,
    "count" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "partition", "offset"),
    CONSTRAINT "EventLog_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_EventLog" ("count", "createdAt", "events", "offset", "partition", "tenantId") SELECT "count", "createdAt", "events", "offset", "partition", "tenantId" FROM "EventLog";
DROP TABLE "EventLog";
ALTER TABLE "new_EventLog" RENAME TO "EventLog";
CREATE TABLE "new_IngestRecord" (
    "tenantId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "key" TEXT,
    "requestHash" TEXT,
    "accepted" INTEGER NOT NULL,
    "duplicates" INTEGER NOT NULL,
    "eventIds" TEXT,
    "createdAtMs" BIGINT NOT NULL,

    PRIMARY KEY ("tenantId", "seq"),
    CONSTRAINT "IngestRecord_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_IngestRecord" ("accepted", "createdAtMs", "duplicates", "eventIds", "key", "requestHash", "seq", "tenantId") SELECT "accepted", "createdAtMs", "duplicates", "eventIds", "key", "requestHash", "seq", "tenantId" FROM "IngestRecord";
DROP TABLE "IngestRecord";
ALTER TABLE "new_IngestRecord" RENAME TO "IngestRecord";
CREATE INDEX "IngestRecord_tenantId_createdAtMs_idx" ON "IngestRecord"("tenantId", "createdAtMs");
CREATE UNIQUE INDEX "IngestRecord_tenantId_key_key" ON "IngestRecord"("tenantId", "key");
CREATE TABLE "new_PartitionState" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL DEFAULT 0,
    "owner" TEXT,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "leaseUntilMs" BIGINT NOT NULL DEFAULT 0,

    PRIMARY KEY ("tenantId", "partition"),
    CONSTRAINT "PartitionState_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_PartitionState" ("epoch", "leaseUntilMs", "offset", "owner", "partition", "tenantId") SELECT "epoch", "leaseUntilMs", "offset", "owner", "partition", "tenantId" FROM "PartitionState";
DROP TABLE "PartitionState";
ALTER TABLE "new_PartitionState" RENAME TO "PartitionState";
CREATE TABLE "new_Consumer" (
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "cursor" BIGINT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "name"),
    CONSTRAINT "Consumer_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Consumer" ("cursor", "name", "tenantId", "updatedAt") SELECT "cursor", "name", "tenantId", "updatedAt" FROM "Consumer";
DROP TABLE "Consumer";
ALTER TABLE "new_Consumer" RENAME TO "Consumer";
CREATE TABLE "new_DeadLetter" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "step" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "logOffset" BIGINT NOT NULL,
    "eventIndex" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "DeadLetter_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_DeadLetter" ("createdAt", "event", "eventIndex", "id", "instanceId", "logOffset", "partition", "reason", "step", "tenantId") SELECT "createdAt", "event", "eventIndex", "id", "instanceId", "logOffset", "partition", "reason", "step", "tenantId" FROM "DeadLetter";
DROP TABLE "DeadLetter";
ALTER TABLE "new_DeadLetter" RENAME TO "DeadLetter";
CREATE INDEX "DeadLetter_tenantId_createdAt_idx" ON "DeadLetter"("tenantId", "createdAt");
CREATE TABLE "new_TenantLimits" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "limits" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "TenantLimits_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_TenantLimits" ("limits", "tenantId", "updatedAt") SELECT "limits", "tenantId", "updatedAt" FROM "TenantLimits";
DROP TABLE "TenantLimits";
ALTER TABLE "new_TenantLimits" RENAME TO "TenantLimits";
CREATE TABLE "new_JournalTrim" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "trimmedThrough" BIGINT NOT NULL,
    CONSTRAINT "JournalTrim_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_JournalTrim" ("tenantId", "trimmedThrough") SELECT "tenantId", "trimmedThrough" FROM "JournalTrim";
DROP TABLE "JournalTrim";
ALTER TABLE "new_JournalTrim" RENAME TO "JournalTrim";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
