-- Crowd names may no longer start with "." (a crowd named ".." turned the studio's delete of it into a delete of its
-- tenant). Such crowds keep their users under the same name with a leading "_", which the name rule allows.
UPDATE "Crowd" SET "name" = '_' || "name"
WHERE "name" LIKE '.%'
  AND NOT EXISTS (SELECT 1 FROM "Crowd" AS "taken" WHERE "taken"."tenantId" = "Crowd"."tenantId" AND "taken"."name" = '_' || "Crowd"."name");
