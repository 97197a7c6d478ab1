-- CreateTable
CREATE TABLE "DeadLetter" (
    "id" TEXT NOT NULL,
    "tenantId" TEXT NOT NULL,
    "instanceId" TEXT NOT NULL,
    "step" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "logOffset" BIGINT NOT NULL,
    "eventIndex" INTEGER NOT NULL,
    "event" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeadLetter_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TenantLimits" (
    "tenantId" TEXT NOT NULL,
    "limits" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TenantLimits_pkey" PRIMARY KEY ("tenantId")
);

-- CreateIndex
CREATE INDEX "DeadLetter_tenantId_createdAt_idx" ON "DeadLetter"("tenantId", "createdAt");
