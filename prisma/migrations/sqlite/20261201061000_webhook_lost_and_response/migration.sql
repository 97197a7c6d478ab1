-- Webhooks (server/webhooks/): the trim watermark reported to a destination as lost, `lost` deliveries, and the
-- receiver's answer kept apart from our own error text so that only admins read it.
ALTER TABLE "WebhookDestination" ADD COLUMN "lostThrough" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "WebhookDelivery" ADD COLUMN "lastResponse" TEXT;
ALTER TABLE "WebhookDelivery" ADD COLUMN "lostAfter" BIGINT;
