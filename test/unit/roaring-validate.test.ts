import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deserializeBitmap, RoaringBitmap32, serializeBitmap } from '../../server/crowd/bitmap';
import { validatePortable } from '../../server/crowd/roaring-validate';
import { combineCrowds, loadCrowd, saveCrowd } from '../../server/crowd/store';
import { AppError } from '../../server/errors';
import { database } from '../helpers/app-db';
import { bitsetOf, cardinalityOf, type Container, corruptExamples, encodePortable, type EncodeOptions, type Run } from '../helpers/portable-roaring';
import { tenantRow } from '../helpers/tenant-row';

/** The error validatePortable throws for `bytes`; fails the test when it accepts them. */
function refusal(bytes: Uint8Array): AppError {
  try {
    validatePortable(bytes);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('invalid_bitmap');
    return error as AppError;
  }
  throw new Error(`accepted ${bytes.byteLength} corrupt bytes`);
}

const u16 = fc.integer({ min: 0, max: 65535 });
const sortedUnique = (min: number, max: number) => fc.uniqueArray(u16, { minLength: min, maxLength: max }).map((values) => values.sort((a, b) => a - b));

/** Sorted runs with a gap of at least one value between them, all within 0…65535. */
const runsArb = fc.array(fc.tuple(fc.integer({ min: 1, max: 4000 }), fc.integer({ min: 0, max: 4000 })), { minLength: 1, maxLength: 12 }).map((pairs) => {
  const runs: Run[] = [];
  let last = -2;
  for (const [gap, length] of pairs) {
    const start = runs.length === 0 ? gap - 1 : last + 1 + gap;
    if (start + length > 65535) break;
    runs.push([start, length]);
    last = start + length;
  }
  return runs.length > 0 ? runs : ([[65535, 0]] as Run[]);
});

const containerArb = (key: number): fc.Arbitrary<Container> =>
  fc.oneof(
    sortedUnique(1, 300).map((values): Container => ({ key, kind: 'array', values })),
    fc
      .record({ seed: fc.integer(), density: fc.double({ min: 0.1, max: 0.97, noNaN: true }) })
      .map(({ seed, density }): Container => ({ key, kind: 'bitset', bits: bitsetOf(seed, density) })),
    runsArb.map((runs): Container => ({ key, kind: 'run', runs })),
  );

/** A valid bitmap as containers, with at least `min` of them, and whether to write the run cookie regardless. */
const modelArb = (min: number) =>
  sortedUnique(min, 6).chain((keys) =>
    fc.record({ containers: fc.tuple(...keys.map(containerArb)), runCookie: keys.length > 0 ? fc.boolean() : fc.constant(false) }),
  );

/** A valid bitmap with one container swapped for `corrupt(key)`: the problem named must be that container's. */
function withCorruptContainer(corrupt: (key: number) => fc.Arbitrary<{ container: Container; options?: EncodeOptions; problem: RegExp }>) {
  return modelArb(1).chain(({ containers, runCookie }) =>
    fc.nat({ max: containers.length - 1 }).chain((index) =>
      corrupt(containers[index].key).map(({ container, options, problem }) => {
        const all = containers.with(index, container);
        const headerCardinality = options?.cardinality;
        return {
          bytes: encodePortable(all, { runCookie, cardinality: headerCardinality && ((i, actual) => (i === index ? headerCardinality(0, actual) : actual)) }),
          where: `container ${index} (key ${container.key}): `,
          problem,
        };
      }),
    ),
  );
}

const run = (key: number, runs: Run[], options?: EncodeOptions) => ({ container: { key, kind: 'run', runs } as Container, options });

const CONTAINER_CORRUPTIONS: Record<string, (key: number) => fc.Arbitrary<{ container: Container; options?: EncodeOptions; problem: RegExp }>> = {
  'repeated run': (key) =>
    fc.tuple(fc.integer({ min: 0, max: 60000 }), fc.integer({ min: 0, max: 5000 })).map(([s, l]) => ({
      ...run(key, [
        [s, l],
        [s, l],
      ]),
      problem: /run 1 overlaps run 0/,
    })),
  'overlapping runs': (key) =>
    fc
      .tuple(
        fc.integer({ min: 0, max: 60000 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 1000 }),
      )
      .map(([a, la, at, lb]) => {
        const b = a + Math.floor(at * la);
        return {
          ...run(key, [
            [a, la],
            [b, lb],
          ]),
          problem: /run 1 overlaps run 0/,
        };
      }),
  'unsorted runs': (key) =>
    fc
      .tuple(fc.integer({ min: 0, max: 30000 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 1, max: 20000 }), fc.integer({ min: 0, max: 1000 }))
      .map(([a, la, gap, lb]) => ({
        ...run(key, [
          [a + la + 1 + gap, lb],
          [a, la],
        ]),
        problem: /run 1 starts before run 0 \(runs must be sorted\)/,
      })),
  'adjacent runs': (key) =>
    fc.tuple(fc.integer({ min: 0, max: 60000 }), fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 })).map(([a, la, lb]) => ({
      ...run(key, [
        [a, la],
        [a + la + 1, lb],
      ]),
      problem: /run 1 continues run 0/,
    })),
  'run past 65535': (key) =>
    fc
      .integer({ min: 1, max: 65535 })
      .chain((s) => fc.tuple(fc.constant(s), fc.integer({ min: 65536 - s, max: 65535 })))
      .map(([s, l]) => ({ ...run(key, [[s, l]]), problem: new RegExp(`run 0 \\(${s} to ${s + l}\\) goes past 65535`) })),
  'run container without runs': (key) =>
    fc.integer({ min: 1, max: 65536 }).map((c) => ({ ...run(key, [], { cardinality: () => c }), problem: /a run container with no runs/ })),
  'run cardinality mismatch': (key) =>
    fc.tuple(runsArb, fc.integer({ min: 1, max: 65536 })).map(([runs, header]) => {
      const actual = cardinalityOf({ key, kind: 'run', runs });
      const wrong = header === actual ? (actual % 65536) + 1 : header;
      return { ...run(key, runs, { cardinality: () => wrong }), problem: new RegExp(`runs hold ${actual} values but the header says ${wrong}`) };
    }),
  'unsorted array': (key) =>
    fc.tuple(sortedUnique(2, 300), fc.nat()).map(([values, at]) => {
      const j = at % (values.length - 1);
      const swapped = values.with(j, values[j + 1]).with(j + 1, values[j]);
      return {
        container: { key, kind: 'array', values: swapped },
        problem: new RegExp(`array value ${j + 1} \\(${values[j]}\\) is below value ${j} \\(${values[j + 1]}\\)`),
      };
    }),
  'repeated array value': (key) =>
    fc.tuple(sortedUnique(1, 300), fc.nat()).map(([values, at]) => {
      const j = at % values.length;
      return {
        container: { key, kind: 'array', values: values.toSpliced(j, 0, values[j]) },
        problem: new RegExp(`array value ${j + 1} \\(${values[j]}\\) repeats value ${j}`),
      };
    }),
  'bitset cardinality mismatch': (key) =>
    fc.tuple(fc.integer(), fc.double({ min: 0.1, max: 0.97, noNaN: true }), fc.integer({ min: 4097, max: 65536 })).map(([seed, density, header]) => {
      const bits = bitsetOf(seed, density);
      const actual = cardinalityOf({ key, kind: 'bitset', bits });
      const wrong = header === actual ? actual + (actual < 65536 ? 1 : -1) : header;
      return {
        container: { key, kind: 'bitset', bits },
        options: { cardinality: () => wrong },
        problem: new RegExp(`the bitset holds ${actual} values but the header says ${wrong}`),
      };
    }),
};

describe('portable roaring validation', () => {
  it('accepts every bitmap the roaring package serializes, counting its users', () => {
    const range = fc.record({
      start: fc.integer({ min: 0, max: 4294967295 }),
      length: fc.integer({ min: 0, max: 150_000 }),
      step: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4294967295 }), { maxLength: 2000 }),
        fc.array(range, { maxLength: 3 }),
        fc.boolean(),
        (ids, ranges, optimize) => {
          const bitmap = RoaringBitmap32.from(ids);
          for (const { start, length, step } of ranges) {
            if (step === 1) bitmap.addRange(start, Math.min(start + length, 2 ** 32));
            else for (let id = start; id < Math.min(start + length, 2 ** 32); id += step) bitmap.add(id);
          }
          if (optimize) bitmap.runOptimize();
          expect(validatePortable(serializeBitmap(bitmap))).toBe(bitmap.size);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('accepts every well-formed file, with the users roaring reads from it', () => {
    fc.assert(
      fc.property(modelArb(0), ({ containers, runCookie }) => {
        const bytes = encodePortable(containers, { runCookie });
        const users = containers.reduce((sum, c) => sum + cardinalityOf(c), 0);
        expect(validatePortable(bytes)).toBe(users);
        expect(deserializeBitmap(bytes).size).toBe(users);
      }),
    );
  });

  for (const [kind, corrupt] of Object.entries(CONTAINER_CORRUPTIONS)) {
    it(`refuses ${kind}, naming the container and the problem`, () => {
      fc.assert(
        fc.property(withCorruptContainer(corrupt), ({ bytes, where, problem }) => {
          const { message } = refusal(bytes);
          expect(message).toContain(where);
          expect(message).toMatch(problem);
        }),
      );
    });
  }

  it('refuses repeated and unsorted container keys', () => {
    fc.assert(
      fc.property(modelArb(2), fc.nat(), fc.boolean(), ({ containers, runCookie }, at, repeat) => {
        const i = at % (containers.length - 1);
        const [a, b] = [containers[i], containers[i + 1]];
        const changed = repeat ? containers.with(i + 1, { ...b, key: a.key }) : containers.with(i, b).with(i + 1, a);
        const { message } = refusal(encodePortable(changed, { runCookie }));
        expect(message).toContain(
          repeat
            ? `container ${i + 1} (key ${a.key}): repeats container ${i}'s key ${a.key}`
            : `container ${i + 1} (key ${a.key}): comes after container ${i}'s key ${b.key}`,
        );
      }),
    );
  });

  it('refuses a wrong offset, every truncation, trailing bytes and a wrong cookie', () => {
    fc.assert(
      fc.property(modelArb(4), fc.nat(), fc.integer({ min: 1, max: 100 }), ({ containers, runCookie }, at, shift) => {
        const index = at % containers.length;
        const { message } = refusal(encodePortable(containers, { runCookie, offset: (i, actual) => (i === index ? actual + shift : actual) }));
        expect(message).toMatch(new RegExp(`container ${index} \\(key \\d+\\): the offset table says it starts at byte \\d+, it starts at byte \\d+`));
      }),
    );
    fc.assert(
      fc.property(modelArb(0), fc.nat(), fc.uint8Array({ minLength: 1, maxLength: 16 }), ({ containers, runCookie }, at, extra) => {
        const bytes = encodePortable(containers, { runCookie });
        refusal(bytes.subarray(0, at % bytes.length));
        expect(refusal(Buffer.concat([bytes, extra])).message).toContain(
          `ends after ${bytes.length} bytes but ${bytes.length + extra.length} bytes were given`,
        );
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 64 }), (bytes) => {
        const cookie = Buffer.from(bytes).readUInt32LE(0);
        fc.pre((cookie & 0xffff) !== 12347 && cookie !== 12346);
        expect(refusal(bytes).message).toMatch(/not a portable roaring cookie/);
      }),
    );
  });

  it('names the problems of the corrupt files the issue found', () => {
    for (const { kind, bytes, problem } of corruptExamples()) expect(refusal(bytes).message, kind).toMatch(problem);
  });

  it('refuses a stored crowd that is corrupt by name, in a load and in a combination', async () => {
    const tenantId = await tenantRow('tn_roaring_validate');
    await saveCrowd(database(), tenantId, 'legacy', RoaringBitmap32.from([1]), 'create');
    await saveCrowd(database(), tenantId, 'good', RoaringBitmap32.from([5, 100, 200, 300]), 'create');
    const corrupt = encodePortable([
      {
        key: 0,
        kind: 'run',
        runs: [
          [5, 0],
          [5, 0],
        ],
      },
    ]);
    await database().db.crowd.update({ where: { tenantId_name: { tenantId, name: 'legacy' } }, data: { bitmap: new Uint8Array(corrupt) } });
    const named = {
      code: 'invalid_bitmap',
      message: expect.stringMatching(/^Crowd "legacy" is stored corrupt; replace it with PUT \(.*run 1 overlaps run 0\)$/),
    };
    await expect(loadCrowd(database(), tenantId, 'legacy')).rejects.toMatchObject(named);
    await expect(combineCrowds(database(), tenantId, { name: 'both', op: 'union', crowds: ['legacy', 'good'], replace: false })).rejects.toMatchObject(named);
    expect(await loadCrowd(database(), tenantId, 'both')).toBeNull();
  });
});
