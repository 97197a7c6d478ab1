import { z } from 'zod';
import { AppError } from '../errors';
import { checkCrowdUsers, tenantLimits } from '../limits/limits';
import { parseCrowdUpload, uploadFormat } from './parse';
import { assertCrowdAbsent, CrowdName, saveCrowd, type CrowdMeta } from './store';
import type { Database } from '../storage/database';

export const CrowdParams = z.object({ name: CrowdName });

/**
 * Reads a crowd upload request of at most `maxBytes` (CROWDFLOW_MAX_UPLOAD_BYTES) and stores it. Everything that can be refused without the body (name,
 * Content-Type, declared size, an existing name for create) is refused before a byte is read; a refused
 * upload stores nothing, since the bitmap is written in one statement only once the whole body parsed.
 */
export async function uploadCrowd(
  database: Database,
  request: Request,
  tenantId: string,
  rawName: string,
  mode: 'create' | 'replace',
  maxBytes: number,
): Promise<{ crowd: CrowdMeta; created: boolean }> {
  const { name } = CrowdParams.parse({ name: rawName });
  const contentType = request.headers.get('content-type');
  uploadFormat(contentType);
  const declared = Number(request.headers.get('content-length') ?? 0);
  if (declared > maxBytes) {
    throw new AppError('payload_too_large', `The upload is ${declared} bytes; the limit is ${maxBytes} bytes (CROWDFLOW_MAX_UPLOAD_BYTES)`);
  }
  if (mode === 'create') await assertCrowdAbsent(database, tenantId, name, 'use PUT to replace it');
  const limits = await tenantLimits(database, tenantId);
  const checkUsers = (users: number) => checkCrowdUsers(users, limits, maxBytes);
  const bitmap = await parseCrowdUpload(request.body, contentType, maxBytes, checkUsers);
  checkUsers(bitmap.size);
  return saveCrowd(database, tenantId, name, bitmap, mode);
}
