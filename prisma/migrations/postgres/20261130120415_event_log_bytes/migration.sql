-- AlterTable: rows written before keep their JSON text, as UTF-8 bytes (server/engine/log-codec.ts reads both)
ALTER TABLE "EventLog" ALTER COLUMN "events" SET DATA TYPE BYTEA USING convert_to("events", 'UTF8');
