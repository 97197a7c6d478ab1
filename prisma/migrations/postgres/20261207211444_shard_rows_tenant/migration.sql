-- Every row of these tables belongs to the tenant of its instance, workflow, webhook destination or frequency cap; the
-- column names it, so every statement on them can name its tenant (docs/SCALING.md). Existing rows take their parent's.
ALTER TABLE "ShardCheckpoint" ADD COLUMN "tenantId" TEXT;
UPDATE "ShardCheckpoint" t SET "tenantId" = p."tenantId" FROM "Instance" p WHERE p."id" = t."instanceId";
ALTER TABLE "ShardCheckpoint" ALTER COLUMN "tenantId" SET NOT NULL, DROP CONSTRAINT "ShardCheckpoint_pkey", ADD CONSTRAINT "ShardCheckpoint_pkey" PRIMARY KEY ("tenantId", "instanceId", "partition");

ALTER TABLE "ShardTimerPlan" ADD COLUMN "tenantId" TEXT;
UPDATE "ShardTimerPlan" t SET "tenantId" = p."tenantId" FROM "Instance" p WHERE p."id" = t."instanceId";
ALTER TABLE "ShardTimerPlan" ALTER COLUMN "tenantId" SET NOT NULL, DROP CONSTRAINT "ShardTimerPlan_pkey", ADD CONSTRAINT "ShardTimerPlan_pkey" PRIMARY KEY ("tenantId", "instanceId", "partition");

ALTER TABLE "CrowdChange" ADD COLUMN "tenantId" TEXT;
UPDATE "CrowdChange" t SET "tenantId" = p."tenantId" FROM "Instance" p WHERE p."id" = t."instanceId";
ALTER TABLE "CrowdChange" ALTER COLUMN "tenantId" SET NOT NULL;

ALTER TABLE "Conversion" ADD COLUMN "tenantId" TEXT;
UPDATE "Conversion" t SET "tenantId" = p."tenantId" FROM "Instance" p WHERE p."id" = t."instanceId";
ALTER TABLE "Conversion" ALTER COLUMN "tenantId" SET NOT NULL;

ALTER TABLE "CountsSample" ADD COLUMN "tenantId" TEXT;
UPDATE "CountsSample" t SET "tenantId" = p."tenantId" FROM "Instance" p WHERE p."id" = t."instanceId";
ALTER TABLE "CountsSample" ALTER COLUMN "tenantId" SET NOT NULL, DROP CONSTRAINT "CountsSample_pkey", ADD CONSTRAINT "CountsSample_pkey" PRIMARY KEY ("tenantId", "instanceId", "resolution", "at");

ALTER TABLE "WorkflowVersion" ADD COLUMN "tenantId" TEXT;
UPDATE "WorkflowVersion" t SET "tenantId" = p."tenantId" FROM "Workflow" p WHERE p."id" = t."workflowId";
ALTER TABLE "WorkflowVersion" ALTER COLUMN "tenantId" SET NOT NULL, DROP CONSTRAINT "WorkflowVersion_pkey", ADD CONSTRAINT "WorkflowVersion_pkey" PRIMARY KEY ("tenantId", "workflowId", "version");

ALTER TABLE "WebhookDelivery" ADD COLUMN "tenantId" TEXT;
UPDATE "WebhookDelivery" t SET "tenantId" = p."tenantId" FROM "WebhookDestination" p WHERE p."id" = t."destinationId";
ALTER TABLE "WebhookDelivery" ALTER COLUMN "tenantId" SET NOT NULL;

ALTER TABLE "FrequencyCapWindow" ADD COLUMN "tenantId" TEXT;
UPDATE "FrequencyCapWindow" t SET "tenantId" = p."tenantId" FROM "FrequencyCap" p WHERE p."id" = t."capId";
ALTER TABLE "FrequencyCapWindow" ALTER COLUMN "tenantId" SET NOT NULL, DROP CONSTRAINT "FrequencyCapWindow_pkey", ADD CONSTRAINT "FrequencyCapWindow_pkey" PRIMARY KEY ("tenantId", "capId", "bucket");

DROP INDEX "CrowdChange_instanceId_partition_idx";
CREATE INDEX "CrowdChange_tenantId_instanceId_partition_idx" ON "CrowdChange"("tenantId", "instanceId", "partition");
DROP INDEX "Conversion_instanceId_partition_idx";
CREATE INDEX "Conversion_tenantId_instanceId_partition_idx" ON "Conversion"("tenantId", "instanceId", "partition");
DROP INDEX "WebhookDelivery_destinationId_fromSeq_fromOffset_idx";
CREATE INDEX "WebhookDelivery_tenantId_destinationId_fromSeq_fromOffset_idx" ON "WebhookDelivery"("tenantId", "destinationId", "fromSeq", "fromOffset");
