-- CreateTable
CREATE TABLE "FrequencyCap" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "maxDeliveries" INTEGER NOT NULL,
    "windowMs" BIGINT NOT NULL,
    "destination" TEXT,
    "exempt" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "FrequencyCap_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "FrequencyCapWindow" (
    "capId" TEXT NOT NULL,
    "bucket" BIGINT NOT NULL,
    "levels" BYTEA NOT NULL,
    "version" INTEGER NOT NULL,

    CONSTRAINT "FrequencyCapWindow_pkey" PRIMARY KEY ("capId","bucket")
);

-- CreateTable
CREATE TABLE "CappedDelivery" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "destinationId" TEXT NOT NULL,
    "seq" BIGINT,
    "instanceId" TEXT NOT NULL,
    "step" TEXT NOT NULL,
    "users" BYTEA NOT NULL,
    "count" INTEGER NOT NULL,
    "timeMs" BIGINT NOT NULL,

    CONSTRAINT "CappedDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "FrequencyCap_tenantId_name_key" ON "FrequencyCap"("tenantId", "name");

-- CreateIndex
CREATE INDEX "CappedDelivery_destinationId_seq_idx" ON "CappedDelivery"("destinationId", "seq");

-- CreateIndex
CREATE INDEX "CappedDelivery_instanceId_step_idx" ON "CappedDelivery"("instanceId", "step");

-- AddForeignKey
ALTER TABLE "FrequencyCap" ADD CONSTRAINT "FrequencyCap_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "FrequencyCapWindow" ADD CONSTRAINT "FrequencyCapWindow_capId_fkey" FOREIGN KEY ("capId") REFERENCES "FrequencyCap"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "CappedDelivery" ADD CONSTRAINT "CappedDelivery_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The caps' bitmaps compress with lz4 like every other bitmap column (migration lz4_bytes says why).
DO $$
DECLARE
  target text[];
BEGIN
  FOREACH target SLICE 1 IN ARRAY ARRAY[
    ['FrequencyCapWindow', 'levels'],
    ['CappedDelivery', 'users']
  ] LOOP
    EXECUTE format('ALTER TABLE %I ALTER COLUMN %I SET COMPRESSION lz4', target[1], target[2]);
  END LOOP;
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
  RAISE NOTICE 'lz4 compression is not available on this server (%): byte columns keep pglz', SQLERRM;
END
$$;
