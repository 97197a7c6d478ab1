-- CreateTable
CREATE TABLE "WebhookDestination" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "headers" TEXT NOT NULL,
    "batchSize" INTEGER NOT NULL,
    "timeoutMs" INTEGER NOT NULL,
    "allNotifications" BOOLEAN NOT NULL DEFAULT false,
    "cursor" BIGINT NOT NULL,
    "cursorUsers" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "WebhookDestination_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "WebhookDelivery" (
    "id" TEXT NOT NULL,
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
    "lastAttemptAt" TIMESTAMP(3),
    "deliveredAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WebhookDelivery_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "WebhookDestination_tenantId_name_key" ON "WebhookDestination"("tenantId", "name");

-- CreateIndex
CREATE INDEX "WebhookDelivery_destinationId_fromSeq_fromOffset_idx" ON "WebhookDelivery"("destinationId", "fromSeq", "fromOffset");

-- CreateIndex
CREATE INDEX "WebhookDelivery_status_idx" ON "WebhookDelivery"("status");

-- AddForeignKey
ALTER TABLE "WebhookDestination" ADD CONSTRAINT "WebhookDestination_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "WebhookDelivery" ADD CONSTRAINT "WebhookDelivery_destinationId_fkey" FOREIGN KEY ("destinationId") REFERENCES "WebhookDestination"("id") ON DELETE CASCADE ON UPDATE CASCADE;
