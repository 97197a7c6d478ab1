-- Every row of these tables belongs to the tenant of its instance, workflow, webhook destination or frequency cap; the
-- column names it, so every statement on them can name its tenant (docs/SCALING.md). Existing rows take their parent's.
-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_WorkflowVersion" (
    "tenantId" TEXT NOT NULL,
    "workflowId" TEXT NOT NULL,
    "version" INTEGER NOT NULL,
    "definition" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "workflowId", "version"),
    CONSTRAINT "WorkflowVersion_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_WorkflowVersion" ("tenantId", "createdAt", "definition", "version", "workflowId") SELECT (SELECT p."tenantId" FROM "Workflow" p WHERE p."id" = "WorkflowVersion"."workflowId"), "createdAt", "definition", "version", "workflowId" FROM "WorkflowVersion";
DROP TABLE "WorkflowVersion";
ALTER TABLE "new_WorkflowVersion" RENAME TO "WorkflowVersion";
CREATE TABLE "new_ShardCheckpoint" (
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "data" BLOB NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "unjournaled" BIGINT NOT NULL DEFAULT 0,

    PRIMARY KEY ("tenantId", "instanceId", "partition"),
    CONSTRAINT "ShardCheckpoint_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ShardCheckpoint" ("tenantId", "data", "instanceId", "journalSeq", "partition", "unjournaled", "updatedAt") SELECT (SELECT p."tenantId" FROM "Instance" p WHERE p."id" = "ShardCheckpoint"."instanceId"), "data", "instanceId", "journalSeq", "partition", "unjournaled", "updatedAt" FROM "ShardCheckpoint";
DROP TABLE "ShardCheckpoint";
ALTER TABLE "new_ShardCheckpoint" RENAME TO "ShardCheckpoint";
CREATE TABLE "new_ShardTimerPlan" (
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "cronNext" TEXT NOT NULL,

    PRIMARY KEY ("tenantId", "instanceId", "partition"),
    CONSTRAINT "ShardTimerPlan_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ShardTimerPlan" ("tenantId", "cronNext", "instanceId", "journalSeq", "partition") SELECT (SELECT p."tenantId" FROM "Instance" p WHERE p."id" = "ShardTimerPlan"."instanceId"), "cronNext", "instanceId", "journalSeq", "partition" FROM "ShardTimerPlan";
DROP TABLE "ShardTimerPlan";
ALTER TABLE "new_ShardTimerPlan" RENAME TO "ShardTimerPlan";
CREATE TABLE "new_CrowdChange" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "journalSeq" BIGINT NOT NULL,
    "timeMs" BIGINT NOT NULL,
    "data" BLOB NOT NULL,
    CONSTRAINT "CrowdChange_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_CrowdChange" ("tenantId", "data", "id", "instanceId", "journalSeq", "partition", "timeMs") SELECT (SELECT p."tenantId" FROM "Instance" p WHERE p."id" = "CrowdChange"."instanceId"), "data", "id", "instanceId", "journalSeq", "partition", "timeMs" FROM "CrowdChange";
DROP TABLE "CrowdChange";
ALTER TABLE "new_CrowdChange" RENAME TO "CrowdChange";
CREATE INDEX "CrowdChange_tenantId_instanceId_partition_idx" ON "CrowdChange"("tenantId", "instanceId", "partition");
CREATE TABLE "new_Conversion" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "step" TEXT NOT NULL,
    "bitmap" BLOB NOT NULL,
    CONSTRAINT "Conversion_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Conversion" ("tenantId", "bitmap", "id", "instanceId", "partition", "step") SELECT (SELECT p."tenantId" FROM "Instance" p WHERE p."id" = "Conversion"."instanceId"), "bitmap", "id", "instanceId", "partition", "step" FROM "Conversion";
DROP TABLE "Conversion";
ALTER TABLE "new_Conversion" RENAME TO "Conversion";
CREATE INDEX "Conversion_tenantId_instanceId_partition_idx" ON "Conversion"("tenantId", "instanceId", "partition");
CREATE TABLE "new_CountsSample" (
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "resolution" INTEGER NOT NULL,
    "at" BIGINT NOT NULL,
    "counts" TEXT NOT NULL,

    PRIMARY KEY ("tenantId", "instanceId", "resolution", "at"),
    CONSTRAINT "CountsSample_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_CountsSample" ("tenantId", "at", "counts", "instanceId", "resolution") SELECT (SELECT p."tenantId" FROM "Instance" p WHERE p."id" = "CountsSample"."instanceId"), "at", "counts", "instanceId", "resolution" FROM "CountsSample";
DROP TABLE "CountsSample";
ALTER TABLE "new_CountsSample" RENAME TO "CountsSample";
CREATE INDEX "CountsSample_resolution_at_idx" ON "CountsSample"("resolution", "at");
CREATE TABLE "new_WebhookDelivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tenantId" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "fromSeq" BIGINT NOT NULL,
    "fromOffset" INTEGER NOT NULL,
    "status" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "users" INTEGER NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "replays" INTEGER NOT NULL DEFAULT 0,
    "lastStatus" INTEGER,
    "lastError" TEXT,
    "lastResponse" TEXT,
    "lostAfter" BIGINT,
    "lastAttemptAt" DATETIME,
    "deliveredAt" DATETIME,
    "createdAt" DATETIME NOT NULL,
    CONSTRAINT "WebhookDelivery_destinationId_fkey" FOREIGN KEY ("destinationId") REFERENCES "WebhookDestination" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_WebhookDelivery" ("tenantId", "attempts", "body", "createdAt", "deliveredAt", "destinationId", "fromOffset", "fromSeq", "id", "lastAttemptAt", "lastError", "lastResponse", "lastStatus", "lostAfter", "replays", "status", "users") SELECT (SELECT p."tenantId" FROM "WebhookDestination" p WHERE p."id" = "WebhookDelivery"."destinationId"), "attempts", "body", "createdAt", "deliveredAt", "destinationId", "fromOffset", "fromSeq", "id", "lastAttemptAt", "lastError", "lastResponse", "lastStatus", "lostAfter", "replays", "status", "users" FROM "WebhookDelivery";
DROP TABLE "WebhookDelivery";
ALTER TABLE "new_WebhookDelivery" RENAME TO "WebhookDelivery";
CREATE INDEX "WebhookDelivery_tenantId_destinationId_fromSeq_fromOffset_idx" ON "WebhookDelivery"("tenantId", "destinationId", "fromSeq", "fromOffset");
CREATE INDEX "WebhookDelivery_status_idx" ON "WebhookDelivery"("status");
CREATE TABLE "new_FrequencyCapWindow" (
    "tenantId" TEXT NOT NULL,
    "capId" TEXT NOT NULL,
    "bucket" BIGINT NOT NULL,
    "levels" BLOB NOT NULL,
    "version" INTEGER NOT NULL,

    PRIMARY KEY ("tenantId", "capId", "bucket"),
    CONSTRAINT "FrequencyCapWindow_capId_fkey" FOREIGN KEY ("capId") REFERENCES "FrequencyCap" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_FrequencyCapWindow" ("tenantId", "bucket", "capId", "levels", "version") SELECT (SELECT p."tenantId" FROM "FrequencyCap" p WHERE p."id" = "FrequencyCapWindow"."capId"), "bucket", "capId", "levels", "version" FROM "FrequencyCapWindow";
DROP TABLE "FrequencyCapWindow";
ALTER TABLE "new_FrequencyCapWindow" RENAME TO "FrequencyCapWindow";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
