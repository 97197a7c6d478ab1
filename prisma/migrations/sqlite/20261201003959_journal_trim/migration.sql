-- CreateTable
CREATE TABLE "JournalTrim" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "trimmedThrough" BIGINT NOT NULL
);
