// Studio sign-in throttling: failed sign-ins are counted in token buckets (server/security/rate-limit.ts), one per
// client address (an IPv6 /64) and one for the account, the admin token being the only account there is. Each bucket
// allows a burst of failures, then refills at burst per window: 10 failures from one address, or 100 from anywhere, then
// one more attempt per 90 s (per 9 s for the account). While a bucket is empty every sign-in it covers is refused with
// 429 `rate_limited` and Retry-After, a correct token too, so a guesser cannot tell a hit from the refusal. A success
// refills its address's bucket. The state is in memory of the process (one throttle, built once with its app).
import { type Clock, systemClock } from '../clock';
import { AppError } from '../errors';
import { refill, secondsUntilToken, type RateLimit, type TokenBucket } from './rate-limit';

export type SignInLimits = { perAddress: number; perAccount: number; windowMs: number };
export const SIGN_IN_LIMITS: SignInLimits = { perAddress: 10, perAccount: 100, windowMs: 15 * 60_000 };

/** Addresses tracked before full buckets (which hold nothing) are dropped, and past it the oldest ones too. */
const MAX_ADDRESSES = 100_000;

export class SignInThrottle {
  private readonly byAddress = new Map<string, TokenBucket>();
  private readonly account: TokenBucket;
  private readonly addressLimit: RateLimit;

  constructor(
    private readonly limits: SignInLimits = SIGN_IN_LIMITS,
    private readonly clock: Clock = systemClock,
  ) {
    this.addressLimit = { burst: limits.perAddress, perSecond: (limits.perAddress * 1000) / limits.windowMs };
    const accountLimit = { burst: limits.perAccount, perSecond: (limits.perAccount * 1000) / limits.windowMs };
    this.account = { tokens: accountLimit.burst, updatedMs: clock.now(), limit: accountLimit };
  }

  /** Throws 429 `rate_limited` when this address, or the account, has no attempt left. */
  check(addressKey: string): void {
    const now = this.clock.now();
    const address = this.byAddress.get(addressKey);
    if (address) refill(address, now);
    refill(this.account, now);
    const limited = address && address.tokens < 1 ? address : this.account.tokens < 1 ? this.account : undefined;
    if (!limited) return;
    const retryAfterSeconds = secondsUntilToken(limited);
    const who = limited === this.account ? 'from all addresses together' : 'from this address';
    throw new AppError(
      'rate_limited',
      `Too many failed sign-ins ${who} (${limited.limit.burst} within ${this.limits.windowMs / 60_000} min); retry in ${retryAfterSeconds} s`,
      { retryAfterSeconds },
    );
  }

  /** Counts one failed sign-in against the address and the account. */
  failed(addressKey: string): void {
    const now = this.clock.now();
    let address = this.byAddress.get(addressKey);
    if (!address) {
      if (this.byAddress.size >= MAX_ADDRESSES) this.evict(now);
      address = { tokens: this.addressLimit.burst, updatedMs: now, limit: this.addressLimit };
      this.byAddress.set(addressKey, address);
    }
    for (const bucket of [address, this.account]) {
      refill(bucket, now);
      bucket.tokens = Math.max(0, bucket.tokens - 1);
    }
  }

  /** A correct token: the address starts afresh (the account's count stands: other addresses may be guessing). */
  succeeded(addressKey: string): void {
    this.byAddress.delete(addressKey);
  }

  private evict(now: number): void {
    for (const [key, bucket] of this.byAddress) {
      refill(bucket, now);
      if (bucket.tokens >= bucket.limit.burst) this.byAddress.delete(key);
    }
    // Maps iterate in insertion order: past the cap the addresses seen longest ago go first, a tenth at once so that
    // a flood of new addresses does not walk the whole map at every failure.
    for (const key of this.byAddress.keys()) {
      if (this.byAddress.size < MAX_ADDRESSES * 0.9) break;
      this.byAddress.delete(key);
    }
  }
}
