-- The event ids of each keyed request (IngestRecord."eventIds", ~38 bytes per UUID id, ~38 KB per 1,000-event batch)
-- compress with lz4 instead of pglz, as the byte columns do since 20261201062500.
DO $$
BEGIN
  ALTER TABLE "IngestRecord" ALTER COLUMN "eventIds" SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN
  RAISE NOTICE 'lz4 compression is not available on this server (%): IngestRecord.eventIds keeps pglz', SQLERRM;
END
$$;
