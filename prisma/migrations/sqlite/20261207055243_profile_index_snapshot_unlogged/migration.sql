-- CreateTable
CREATE TABLE "ProfileIndexSnapshot" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "seq" BIGINT NOT NULL,
    "bytes" BLOB NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "ProfileIndexSnapshot_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- The profile index snapshot moves to its own table (on PostgreSQL an UNLOGGED one); the snapshots stored so far move over.
INSERT INTO "ProfileIndexSnapshot" ("tenantId", "seq", "bytes", "updatedAt")
SELECT "tenantId", "snapshotSeq", "snapshot", "updatedAt" FROM "ProfileIndexState" WHERE "snapshot" IS NOT NULL;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_ProfileIndexState" (
    "tenantId" TEXT NOT NULL PRIMARY KEY,
    "seq" BIGINT NOT NULL DEFAULT 0,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "ProfileIndexState_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_ProfileIndexState" ("seq", "tenantId", "updatedAt") SELECT "seq", "tenantId", "updatedAt" FROM "ProfileIndexState";
DROP TABLE "ProfileIndexState";
ALTER TABLE "new_ProfileIndexState" RENAME TO "ProfileIndexState";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
