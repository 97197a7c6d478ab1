-- The profile index snapshot moves to its own table, UNLOGGED: it is derived from the Profile rows (a missing or stale
-- snapshot is rebuilt from them), and writing it, megabytes at a time, through the WAL made other tenants' commits
-- wait for WAL syncs behind it (B's single events, 82-203 ms at p99/max while tenant A's 2M-profile snapshot was written).
-- After an unclean stop PostgreSQL empties unlogged tables, and standbys do not receive them: both rebuild on load.

-- CreateTable
CREATE UNLOGGED TABLE "ProfileIndexSnapshot" (
    "tenantId" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "bytes" BYTEA NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ProfileIndexSnapshot_pkey" PRIMARY KEY ("tenantId")
);

-- The snapshots stored so far move over (else each tenant's next boot rebuilds its index once).
INSERT INTO "ProfileIndexSnapshot" ("tenantId", "seq", "bytes", "updatedAt")
SELECT "tenantId", "snapshotSeq", "snapshot", "updatedAt" FROM "ProfileIndexState" WHERE "snapshot" IS NOT NULL;

-- AlterTable
ALTER TABLE "ProfileIndexState" DROP COLUMN "snapshot",
DROP COLUMN "snapshotSeq";

-- AddForeignKey
ALTER TABLE "ProfileIndexSnapshot" ADD CONSTRAINT "ProfileIndexSnapshot_tenantId_fkey" FOREIGN KEY ("tenantId") REFERENCES "Tenant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- As the other byte columns (20261201062500_lz4_bytes): lz4 where the server has it.
DO $$
BEGIN
  ALTER TABLE "ProfileIndexSnapshot" ALTER COLUMN "bytes" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
  RAISE NOTICE 'lz4 compression is not available on this server (%): the snapshot keeps pglz', SQLERRM;
END
$$;
