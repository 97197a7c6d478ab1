-- CreateTable
CREATE TABLE "ProfileIndexState" (
    "tenantId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "snapshotSeq" BIGINT NOT NULL DEFAULT -1,
    "snapshot" BYTEA,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProfileIndexState_pkey" PRIMARY KEY ("tenantId")
);
