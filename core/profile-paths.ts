// Attribute paths and timestamp reading shared by the profile index and condition planning (browser-safe: no roaring).

const SEPARATOR = '\u001f';

/** The key of a path (a list of object keys): segments joined by U+001F, which keys rarely hold (then escaped). */
export function pathKey(segments: readonly string[]): string {
  return segments.map(segmentKey).join(SEPARATOR);
}

/** One segment of a path key (the key of a top-level path). */
export function segmentKey(segment: string): string {
  return segment.includes(SEPARATOR) || segment.includes('\\') ? segment.replaceAll('\\', '\\\\').replaceAll(SEPARATOR, '\\u') : segment;
}

/** How people read a path: `address.country`. */
export function displayPath(segments: readonly string[]): string {
  return segments.join('.');
}

/** What cel-js's timestamp(string) accepts (20–30 characters that `new Date` parses, years 1–9999), in epoch ms. */
export function celTimestampMs(text: string): number | null {
  if (text.length < 20 || text.length > 30) return null;
  const ms = Date.parse(text);
  return ms <= 253402300799999 && ms >= -62135596800000 ? ms : null;
}
