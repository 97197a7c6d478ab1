// Frequency caps (issue 37 §2), in process: a 10M-user bulk move into a step whose enter action is a webhook, under a
// cap of 2 deliveries a day that 40% of the moving users have reached (and 30% more got one delivery already). The
// figure is the decision as the pump makes it when it cuts the move (server/webhooks/cap-bitmaps.ts decideCapped:
// users AND at-cap → skipped, users ANDNOT at-cap → delivered); beside it, the decision with counting the delivered
// users into the window's levels (applyCaps) and the window's encoding that the round then writes. Best of `repeats`.
import { performance } from 'node:perf_hooks';
import { RoaringBitmap32 } from '../../server/crowd/bitmap';
import { applyCaps, CapLevels, decideCapped } from '../../server/webhooks/cap-bitmaps';
import { seededRandom } from '../../test/helpers/seeded-random';
import type { Measured } from './journey';

export interface CapFigures {
  decision: Measured;
  decideAndCount: Measured;
  encode: Measured;
}

/** Best of the runs (the figure), with every run's wall time, their median and the process CPU time of each. */
function best(repeats: number, run: () => number): { best: number; all: number[]; median: number; cpu: number[] } {
  const all: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const before = process.cpuUsage();
    all.push(run());
    const used = process.cpuUsage(before);
    cpu.push(Math.round((used.user + used.system) / 100) / 10);
  }
  const sorted = [...all].sort((a, b) => a - b);
  const round = (v: number) => Math.round(v * 10) / 10;
  return { best: Math.min(...all), all: all.map(round), median: round(sorted[Math.floor(sorted.length / 2)]), cpu };
}

export function measureCaps(moving: Uint32Array, repeats: number): CapFigures {
  const next = seededRandom(37);
  const atCap: number[] = [];
  const once: number[] = [];
  for (let i = 0; i < moving.length; i++) {
    const r = next();
    if (r < 0.4) atCap.push(moving[i]);
    else if (r < 0.7) once.push(moving[i]);
  }
  const move = new RoaringBitmap32(moving);
  const levelTwo = new RoaringBitmap32(atCap);
  const levelOne = RoaringBitmap32.or(levelTwo, new RoaringBitmap32(once));
  // Users outside this move who received deliveries today too (another journey's crowd).
  levelOne.addRange(0x8000_0000, 0x8000_0000 + Math.floor(moving.length / 5));
  const window = () => new CapLevels([levelOne.clone(), levelTwo.clone()]);

  let capped = 0;
  let delivered = 0;
  const decision = best(repeats, () => {
    const w = window();
    const started = performance.now();
    const result = decideCapped(move, [w]);
    const ms = performance.now() - started;
    capped = result.capped.size;
    delivered = result.delivered.size;
    return ms;
  });
  const counted = best(repeats, () => {
    const w = window();
    const started = performance.now();
    applyCaps(move, [w]);
    return performance.now() - started;
  });
  const counted1 = window();
  applyCaps(move, [counted1]);
  let bytes = 0;
  const encode = best(repeats, () => {
    const started = performance.now();
    bytes = counted1.encode().length;
    return performance.now() - started;
  });
  const facts = { moving: move.size, atCap: levelTwo.size, capped, delivered, runs: decision.all, median: decision.median, cpuMs: decision.cpu };
  if (capped !== levelTwo.size || capped + delivered !== move.size) throw new Error(`caps bench: decision counts do not add up ${JSON.stringify(facts)}`);
  return {
    decision: { value: decision.best, details: facts },
    decideAndCount: { value: counted.best, details: { runs: counted.all, median: counted.median } },
    encode: { value: encode.best, details: { bytes, runs: encode.all, median: encode.median } },
  };
}
