-- Journal seqs come from a sequence (server/storage/journal/max-seq.ts): unique over every tenant without a lock over
-- every tenant's writers, each tenant's writers taking a lock of their own. It continues after the journal's max.
CREATE SEQUENCE "Journal_seq_seq" AS BIGINT OWNED BY "Journal"."seq";
SELECT setval('"Journal_seq_seq"', (SELECT COALESCE(MAX("seq"), 0) + 1 FROM "Journal"), false);
