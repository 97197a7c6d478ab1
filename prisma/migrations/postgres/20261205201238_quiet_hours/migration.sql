-- CreateTable
CREATE TABLE "QuietHours" (
    "tenantId" TEXT NOT NULL,
    "start" TEXT NOT NULL,
    "end" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "zoneAttribute" TEXT NOT NULL,
    "defaultZone" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "QuietHours_pkey" PRIMARY KEY ("tenantId")
);

-- CreateTable
CREATE TABLE "QuietDelivery" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "bulk" BOOLEAN NOT NULL,
    "offsetBase" INTEGER NOT NULL,
    "instanceId" TEXT NOT NULL,
    "fromStep" TEXT,
    "step" TEXT NOT NULL,
    "enterAction" TEXT,
    "leaveAction" TEXT,
    "zone" TEXT NOT NULL,
    "users" BYTEA NOT NULL,
    "count" INTEGER NOT NULL,
    "timeMs" BIGINT NOT NULL,
    "status" TEXT NOT NULL,
    "releaseAt" BIGINT NOT NULL,

    CONSTRAINT "QuietDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "QuietDelivery_destinationId_seq_idx" ON "QuietDelivery"("destinationId", "seq");

-- CreateIndex
CREATE INDEX "QuietDelivery_instanceId_step_idx" ON "QuietDelivery"("instanceId", "step");

-- CreateIndex
CREATE INDEX "QuietDelivery_status_releaseAt_idx" ON "QuietDelivery"("status", "releaseAt");

-- AddForeignKey
ALTER TABLE "QuietHours" ADD CONSTRAINT "QuietHours_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "QuietDelivery" ADD CONSTRAINT "QuietDelivery_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The held users' bitmaps compress with lz4 like every other bitmap column (migration lz4_bytes says why).
DO $$
BEGIN
  ALTER TABLE "QuietDelivery" ALTER COLUMN "users" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
  RAISE NOTICE 'lz4 compression is not available on this server (%): byte columns keep pglz', SQLERRM;
END
$$;
