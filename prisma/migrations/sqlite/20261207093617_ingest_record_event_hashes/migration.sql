-- AlterTable
ALTER TABLE "IngestRecord" ADD COLUMN "eventHashes" BLOB;
