-- CreateTable
CREATE TABLE "ProfileIndexState" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "snapshotSeq" BIGINT NOT NULL DEFAULT -1,
    "snapshot" BLOB,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
