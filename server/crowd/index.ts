// The crowd library: roaring bitmaps of user IDs, how they are uploaded, stored and exported.
export { MAX_USER_ID, RoaringBitmap32, deserializeBitmap, serializeBitmap } from './bitmap';
export { parseCrowdUpload, uploadFormat, type ByteSource, type UploadFormat } from './parse';
export { uploadCrowd, CrowdParams } from './upload';
export { bitmapExportResponse, EXPORT_FORMATS, ExportQuery, type ExportFormat } from './export';
export { onCrowdChanged, type CrowdChange } from './changes';
export {
  assertCrowdAbsent,
  combine,
  combineCrowds,
  CombineCrowdsBody,
  CrowdName,
  crowdView,
  deleteCrowd,
  listCrowds,
  loadCrowd,
  requireCrowd,
  requireCrowdMeta,
  saveCrowd,
  type CrowdMeta,
  type CrowdView,
  type LoadedCrowd,
} from './store';
