-- CreateTable
CREATE TABLE "BaselineUserStep" (
    "journeyId" TEXT NOT NULL,
    "user" BIGINT NOT NULL,
    "step" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("journeyId", "user")
);

-- CreateIndex
CREATE INDEX "BaselineUserStep_journeyId_step_idx" ON "BaselineUserStep"("journeyId", "step");
