// Measured lift of a journey with a holdout (issue 37 §4): the treated group's conversion against the held-out
// group's, with a two-proportion z-test. The test statistic and its p-value use the pooled standard error (the usual
// test of "no difference"); the 95% interval of the difference uses the unpooled one (each group's own variance),
// as an interval must not assume the difference it measures is zero. Pure: the studio computes it from live counts
// exactly as the API reports it.

/** One group's conversion: `rate` is null while the group is empty. */
export type GroupConversion = { users: number; converted: number; rate: number | null };

export type Lift = {
  treatment: GroupConversion;
  holdout: GroupConversion;
  /** Treatment rate − holdout rate (a share, 0.02 = 2 points); null while either group is empty. */
  absolute: number | null;
  /** `absolute` over the holdout's rate (0.25 = 25% more conversions); null while the holdout converted nobody. */
  relative: number | null;
  /** 95% interval of `absolute` (unpooled standard error); null while either group is empty. */
  interval: { low: number; high: number } | null;
  /** The pooled two-proportion z statistic and its two-sided p-value; null when nobody or everybody converted. */
  z: number | null;
  pValue: number | null;
  /**
   * Each group has at least MIN_OUTCOMES users who converted and as many who did not: below that the normal
   * approximation behind the test and the interval is poor (1 conversion in 100 gives an interval that excludes 0
   * while the test says p = 0.16), so no verdict is given.
   */
  enoughData: boolean;
  /** enoughData and p < 0.05. */
  significant: boolean;
};

/** The textbook rule for a normal approximation of a proportion: n·p ≥ 5 and n·(1 − p) ≥ 5 in each group. */
export const MIN_OUTCOMES = 5;

/** The 97.5th percentile of the standard normal: a 95% two-sided interval is ± this many standard errors. */
export const Z_95 = 1.959963984540054;

/** The figures lift is read from: counts of an instance whose workflow has a goal and a holdout. */
export type LiftCounts = { entered: number; converted?: number; holdout?: { entered: number; converted?: number } };

/** The lift the counts measure; null unless the journey has both a holdout and a goal. */
export function liftOf(counts: LiftCounts): Lift | null {
  const held = counts.holdout;
  if (!held || held.converted === undefined || counts.converted === undefined) return null;
  const holdout = group(held.entered, held.converted);
  const treatment = group(counts.entered - held.entered, counts.converted - held.converted);
  const outcomes = [treatment.converted, treatment.users - treatment.converted, holdout.converted, holdout.users - holdout.converted];
  const enoughData = Math.min(...outcomes) >= MIN_OUTCOMES;
  const out: Lift = { treatment, holdout, absolute: null, relative: null, interval: null, z: null, pValue: null, enoughData, significant: false };
  if (treatment.rate === null || holdout.rate === null) return out;
  const [p1, n1, p2, n2] = [treatment.rate, treatment.users, holdout.rate, holdout.users];
  const diff = p1 - p2;
  const unpooled = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
  const pooledRate = (treatment.converted + holdout.converted) / (n1 + n2);
  const pooled = Math.sqrt(pooledRate * (1 - pooledRate) * (1 / n1 + 1 / n2));
  out.absolute = diff;
  out.relative = p2 > 0 ? diff / p2 : null;
  out.interval = { low: diff - Z_95 * unpooled, high: diff + Z_95 * unpooled };
  if (pooled > 0) {
    out.z = diff / pooled;
    out.pValue = erfc(Math.abs(out.z) / Math.SQRT2);
    out.significant = enoughData && out.pValue < 0.05;
  }
  return out;
}

function group(users: number, converted: number): GroupConversion {
  return { users, converted, rate: users > 0 ? converted / users : null };
}

/** The complementary error function (Numerical Recipes' erfcc, fractional error below 1.2e-7). */
function erfc(x: number): number {
  const t = 1 / (1 + 0.5 * Math.abs(x));
  const y =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851973 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? y : 2 - y;
}
