-- AlterTable (a column with a default: SQLite adds it in place, no table copy)
ALTER TABLE "QuietDelivery" ADD COLUMN "releasedUsers" INTEGER NOT NULL DEFAULT 0;
