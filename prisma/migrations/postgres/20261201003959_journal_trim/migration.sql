-- CreateTable
CREATE TABLE "JournalTrim" (
    "tenantId" TEXT NOT NULL,
    "trimmedThrough" BIGINT NOT NULL,

    CONSTRAINT "JournalTrim_pkey" PRIMARY KEY ("tenantId")
);
