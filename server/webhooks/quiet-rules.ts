// Quiet hours of a tenant (issue 37 §3): one rule per tenant (PUT/GET/DELETE /tenants/T/quiet-hours), which a journey
// may override in its workflow definition (`quietHours`: its own rule, or false for none). The rule lives here; the
// decision is made where deliveries are cut (./quiet-holding.ts, ./cut.ts), so users still move: only deliveries wait.
import { notFound } from '../errors';
import { quietHoursProblems } from '../../core/model/quiet-hours';
import { QuietHoursRule } from '../../core/model/workflow';
import type { Database } from '../storage/database';
import { instanceDefinition } from './instance-definition';

/** The tenant's rule as PUT: the shape, then the times and the default zone, each problem naming its field (a 400). */
export const PutQuietHoursBody = QuietHoursRule.superRefine((rule, context) => {
  for (const { field, message } of quietHoursProblems(rule)) context.addIssue({ code: 'custom', message, path: [field] });
});

export type QuietHoursView = QuietHoursRule & { createdAt: string; updatedAt: string };

type QuietHoursRow = NonNullable<Awaited<ReturnType<typeof findRow>>>;

function findRow(database: Database, tenantId: string) {
  return database.db.quietHours.findUnique({ where: { tenantId } });
}

function ruleOf(row: QuietHoursRow): QuietHoursRule {
  return { start: row.start, end: row.end, mode: row.mode as QuietHoursRule['mode'], zoneAttribute: row.zoneAttribute, defaultZone: row.defaultZone };
}

function view(row: QuietHoursRow): QuietHoursView {
  return { ...ruleOf(row), createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString() };
}

/** The tenant's rule; undefined when it has none. */
export async function tenantQuietHours(database: Database, tenantId: string): Promise<QuietHoursRule | undefined> {
  const row = await findRow(database, tenantId);
  return row ? ruleOf(row) : undefined;
}

export async function getQuietHours(database: Database, tenantId: string): Promise<QuietHoursView> {
  const row = await findRow(database, tenantId);
  if (!row) throw notFound('Quiet hours of this tenant (none are set; PUT them)');
  return view(row);
}

/**
 * Sets (or replaces) the tenant's rule. Deliveries held already keep the opening they were given; new ones follow
 * the new rule. Returns the rule and whether it was created.
 */
export async function putQuietHours(
  database: Database,
  tenantId: string,
  rule: QuietHoursRule,
  now: number,
): Promise<{ view: QuietHoursView; created: boolean }> {
  const existed = (await findRow(database, tenantId)) !== null;
  const row = await database.db.quietHours.upsert({
    where: { tenantId },
    create: { tenantId, ...rule, createdAt: new Date(now), updatedAt: new Date(now) },
    update: { ...rule, updatedAt: new Date(now) },
  });
  return { view: view(row), created: !existed };
}

/** Removes the tenant's rule (held deliveries are still sent when their window opens). */
export async function deleteQuietHours(database: Database, tenantId: string): Promise<void> {
  const deleted = await database.db.quietHours.deleteMany({ where: { tenantId } });
  if (deleted.count === 0) throw notFound('Quiet hours of this tenant (none are set)');
}

/**
 * The rule that applies to an instance's deliveries: its workflow version's `quietHours` when it has one (false: none),
 * else the tenant's. Read once per instance and round (an instance's version never changes while it runs).
 */
export class QuietRules {
  private tenantRule: Promise<QuietHoursRule | undefined> | undefined;
  private readonly byInstance = new Map<string, Promise<QuietHoursRule | null>>();

  constructor(
    private readonly database: Database,
    private readonly tenantId: string,
  ) {}

  of(instanceId: string): Promise<QuietHoursRule | null> {
    let rule = this.byInstance.get(instanceId);
    if (!rule) {
      rule = this.read(instanceId);
      this.byInstance.set(instanceId, rule);
    }
    return rule;
  }

  private async read(instanceId: string): Promise<QuietHoursRule | null> {
    const running = await instanceDefinition(this.database, this.tenantId, instanceId);
    const own = running?.definition.quietHours as QuietHoursRule | false | undefined;
    if (own === false) return null;
    if (own) return QuietHoursRule.parse(own);
    this.tenantRule ??= tenantQuietHours(this.database, this.tenantId);
    return (await this.tenantRule) ?? null;
  }
}
