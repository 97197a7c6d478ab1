-- CreateTable
CREATE TABLE "BaselineUserStep" (
    "journeyId" TEXT NOT NULL,
    "user" BIGINT NOT NULL,
    "step" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BaselineUserStep_pkey" PRIMARY KEY ("journeyId","user")
);

-- CreateIndex
CREATE INDEX "BaselineUserStep_journeyId_step_idx" ON "BaselineUserStep"("journeyId", "step");
