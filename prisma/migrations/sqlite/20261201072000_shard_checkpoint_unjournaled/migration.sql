-- Kept shards of partitions held elsewhere (server/cluster/committed-cache.ts) catch up by replaying the journal, which
-- misses what only a checkpoint carries (a crowd update's joiners and leavers): counting such checkpoints lets them see one.
ALTER TABLE "ShardCheckpoint" ADD COLUMN "unjournaled" BIGINT NOT NULL DEFAULT 0;
