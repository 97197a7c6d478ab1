-- Per-step counts of running instances over time (server/engine/counts-history.ts).
CREATE TABLE "CountsSample" (
    "instanceId" TEXT NOT NULL,
    "resolution" INTEGER NOT NULL,
    "at" BIGINT NOT NULL,
    "counts" TEXT NOT NULL,

    PRIMARY KEY ("instanceId", "resolution", "at"),
    CONSTRAINT "CountsSample_instanceId_fkey" FOREIGN KEY ("instanceId") REFERENCES "Instance" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX "CountsSample_resolution_at_idx" ON "CountsSample"("resolution", "at");
