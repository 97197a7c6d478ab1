-- Whether a start excludes the users of the workflow's previous stopped instance (the default, as before) or lets them enter.
ALTER TABLE "Instance" ADD COLUMN "reentry" TEXT NOT NULL DEFAULT 'exclude';
