-- AlterTable
ALTER TABLE "QuietDelivery" ADD COLUMN     "releasedUsers" INTEGER NOT NULL DEFAULT 0;
