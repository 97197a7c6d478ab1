-- AlterTable (a column with a default: SQLite adds it in place, no table copy)
ALTER TABLE "Tenant" ADD COLUMN "userBlock" INTEGER NOT NULL DEFAULT 256;
-- Tenants made before blocks keep user % partitions: their logs, journals and checkpoints were written so.
UPDATE "Tenant" SET "userBlock" = 1;
