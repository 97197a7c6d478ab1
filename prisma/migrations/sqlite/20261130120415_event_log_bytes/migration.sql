-- Rows written before keep their JSON text, as UTF-8 bytes (server/engine/log-codec.ts reads both)
-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
-- One transaction (EventLog has no foreign keys, so nothing cascades): a crash mid-way leaves the old table.
BEGIN;
CREATE TABLE "new_EventLog" (
    "tenantId" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" BIGINT NOT NULL,
    "events" BLOB NOT NULL,
    "count" INTEGER NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("tenantId", "partition", "offset")
);
INSERT INTO "new_EventLog" ("count", "createdAt", "events", "offset", "partition", "tenantId") SELECT "count", "createdAt", CAST("events" AS BLOB), "offset", "partition", "tenantId" FROM "EventLog";
DROP TABLE "EventLog";
ALTER TABLE "new_EventLog" RENAME TO "EventLog";
COMMIT;
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
