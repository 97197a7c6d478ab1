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

-- AddForeignKey
ALTER TABLE "Crowd" ADD CONSTRAINT "Crowd_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Profile" ADD CONSTRAINT "Profile_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ProfileIndexState" ADD CONSTRAINT "ProfileIndexState_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Workflow" ADD CONSTRAINT "Workflow_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "WorkflowVersion" ADD CONSTRAINT "WorkflowVersion_workflowId_fkey" FOREIGN KEY ("workflowId") REFERENCES "Workflow"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Instance" ADD CONSTRAINT "Instance_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "InstanceSnapshot" ADD CONSTRAINT "InstanceSnapshot_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ShardCheckpoint" ADD CONSTRAINT "ShardCheckpoint_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EventLog" ADD CONSTRAINT "EventLog_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "IngestRecord" ADD CONSTRAINT "IngestRecord_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PartitionState" ADD CONSTRAINT "PartitionState_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Consumer" ADD CONSTRAINT "Consumer_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeadLetter" ADD CONSTRAINT "DeadLetter_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TenantLimits" ADD CONSTRAINT "TenantLimits_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "JournalTrim" ADD CONSTRAINT "JournalTrim_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;
