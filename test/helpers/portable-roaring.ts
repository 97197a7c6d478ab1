// A writer of portable roaring bytes (RoaringFormatSpec) that writes whatever it is given, so tests can build the
// corrupt files a careless or hostile client could send: repeated keys, overlapping runs, wrong cardinalities.

export type Run = [start: number, lengthMinusOne: number];
export type Container =
  | { key: number; kind: 'array'; values: number[] }
  | { key: number; kind: 'bitset'; bits: Uint8Array }
  | { key: number; kind: 'run'; runs: Run[] };

export type EncodeOptions = {
  /** The cardinality written in the header of container `index`; by default the container's own. */
  cardinality?: (index: number, actual: number) => number;
  /** The offset written for container `index`; by default where it starts. */
  offset?: (index: number, actual: number) => number;
  /** Use the run cookie (12347) even without run containers. */
  runCookie?: boolean;
};

export function popcount(bits: Uint8Array): number {
  let count = 0;
  for (const byte of bits) for (let b = byte; b; b &= b - 1) count++;
  return count;
}

export function cardinalityOf(container: Container): number {
  if (container.kind === 'array') return container.values.length;
  if (container.kind === 'bitset') return popcount(container.bits);
  return container.runs.reduce((sum, [, length]) => sum + length + 1, 0);
}

const sizeOf = (c: Container) => (c.kind === 'array' ? 2 * c.values.length : c.kind === 'bitset' ? 8192 : 2 + 4 * c.runs.length);

export function encodePortable(containers: Container[], options: EncodeOptions = {}): Buffer {
  const n = containers.length;
  const hasRun = options.runCookie === true || containers.some((c) => c.kind === 'run');
  const headerAt = hasRun ? 4 + Math.ceil(n / 8) : 8;
  const withOffsets = !hasRun || n >= 4;
  let at = headerAt + 4 * n + (withOffsets ? 4 * n : 0);
  const total = at + containers.reduce((sum, c) => sum + sizeOf(c), 0);
  const out = Buffer.alloc(total);
  if (hasRun) {
    out.writeUInt32LE((((n - 1) << 16) | 12347) >>> 0, 0);
    containers.forEach((c, i) => {
      if (c.kind === 'run') out[4 + (i >>> 3)] |= 1 << (i & 7);
    });
  } else {
    out.writeUInt32LE(12346, 0);
    out.writeUInt32LE(n, 4);
  }
  containers.forEach((c, i) => {
    out.writeUInt16LE(c.key, headerAt + 4 * i);
    const actual = cardinalityOf(c);
    out.writeUInt16LE(((options.cardinality?.(i, actual) ?? actual) - 1) & 0xffff, headerAt + 4 * i + 2);
    if (withOffsets) out.writeUInt32LE(options.offset?.(i, at) ?? at, headerAt + 4 * n + 4 * i);
    if (c.kind === 'array') for (const [j, value] of c.values.entries()) out.writeUInt16LE(value, at + 2 * j);
    else if (c.kind === 'bitset') out.set(c.bits, at);
    else {
      out.writeUInt16LE(c.runs.length, at);
      for (const [j, [start, length]] of c.runs.entries()) {
        out.writeUInt16LE(start, at + 2 + 4 * j);
        out.writeUInt16LE(length, at + 4 + 4 * j);
      }
    }
    at += sizeOf(c);
  });
  return out;
}

/** A bitset whose bits are set with probability `density` (a seeded LCG, so fast-check can shrink the seed). */
export function bitsetOf(seed: number, density: number): Uint8Array {
  const bits = new Uint8Array(8192);
  let state = seed >>> 0;
  for (let i = 0; i < 65536; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    if (state / 2 ** 32 < density) bits[i >>> 3] |= 1 << (i & 7);
  }
  return bits;
}

/** One corrupt file of each kind the validator refuses, with the problem it must name. */
export function corruptExamples(): Array<{ kind: string; bytes: Buffer; problem: RegExp }> {
  const dense = bitsetOf(7, 0.5);
  return [
    {
      kind: 'repeated run',
      bytes: encodePortable([
        {
          key: 0,
          kind: 'run',
          runs: [
            [5, 0],
            [5, 0],
          ],
        },
      ]),
      problem: /container 0 \(key 0\): run 1 overlaps run 0/,
    },
    {
      kind: 'overlapping runs',
      bytes: encodePortable([
        {
          key: 0,
          kind: 'run',
          runs: [
            [0, 10],
            [0, 100],
          ],
        },
      ]),
      problem: /container 0 \(key 0\): run 1 overlaps run 0/,
    },
    {
      kind: 'unsorted runs',
      bytes: encodePortable([
        {
          key: 3,
          kind: 'run',
          runs: [
            [100, 1],
            [10, 1],
          ],
        },
      ]),
      problem: /run 1 starts before run 0/,
    },
    {
      kind: 'adjacent runs',
      bytes: encodePortable([
        {
          key: 3,
          kind: 'run',
          runs: [
            [10, 4],
            [15, 1],
          ],
        },
      ]),
      problem: /run 1 continues run 0/,
    },
    {
      kind: 'run past 65535',
      bytes: encodePortable([{ key: 65535, kind: 'run', runs: [[65500, 99]] }]),
      problem: /container 0 \(key 65535\): run 0 \(65500 to 65599\) goes past 65535/,
    },
    { kind: 'run container without runs', bytes: encodePortable([{ key: 1, kind: 'run', runs: [] }], { cardinality: () => 1 }), problem: /no runs/ },
    {
      kind: 'run cardinality mismatch',
      bytes: encodePortable([{ key: 1, kind: 'run', runs: [[0, 9]] }], { cardinality: () => 3 }),
      problem: /runs hold 10 values but the header says 3/,
    },
    {
      kind: 'repeated container key',
      bytes: encodePortable([
        { key: 2, kind: 'array', values: [1] },
        { key: 2, kind: 'array', values: [2] },
      ]),
      problem: /container 1 \(key 2\): repeats container 0's key 2/,
    },
    {
      kind: 'unsorted container keys',
      bytes: encodePortable([
        { key: 9, kind: 'array', values: [1] },
        { key: 2, kind: 'array', values: [2] },
      ]),
      problem: /container 1 \(key 2\): comes after container 0's key 9/,
    },
    { kind: 'unsorted array', bytes: encodePortable([{ key: 0, kind: 'array', values: [1, 7, 3] }]), problem: /array value 2 \(3\) is below value 1 \(7\)/ },
    { kind: 'repeated array value', bytes: encodePortable([{ key: 0, kind: 'array', values: [1, 7, 7] }]), problem: /array value 2 \(7\) repeats value 1/ },
    {
      kind: 'bitset cardinality mismatch',
      bytes: encodePortable([{ key: 0, kind: 'bitset', bits: dense }], { cardinality: (_, actual) => actual + 1 }),
      problem: new RegExp(`the bitset holds ${popcount(dense)} values but the header says ${popcount(dense) + 1}`),
    },
    {
      kind: 'wrong offset',
      bytes: encodePortable([{ key: 0, kind: 'array', values: [1] }], { offset: (_, actual) => actual + 2 }),
      problem: /the offset table says it starts at byte 18, it starts at byte 16/,
    },
    { kind: 'truncated', bytes: encodePortable([{ key: 0, kind: 'array', values: [1, 2, 3] }]).subarray(0, 19), problem: /truncated/ },
    {
      kind: 'trailing bytes',
      bytes: Buffer.concat([encodePortable([{ key: 0, kind: 'array', values: [1] }]), Buffer.from([0, 0])]),
      problem: /ends after 18 bytes but 20 bytes were given/,
    },
    { kind: 'wrong cookie', bytes: Buffer.from([1, 2, 3, 4, 0, 0, 0, 0]), problem: /not a portable roaring cookie/ },
    { kind: 'too many containers', bytes: Buffer.from([0x3a, 0x30, 0, 0, 1, 0, 1, 0]), problem: /declares 65537 containers/ },
  ];
}
