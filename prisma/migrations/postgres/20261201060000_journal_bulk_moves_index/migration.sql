-- Bulk moves (user IS NULL) of one partition, newest first: where-is-user searches them for a user's bulk moves
-- (server/engine/store/user-moves.ts). Partial, so per-user journal writes (most of them) do not maintain it.
CREATE INDEX "Journal_bulk_tenantId_partition_seq_idx" ON "Journal"("tenantId", "partition", "seq") WHERE "user" IS NULL;
