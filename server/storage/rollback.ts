// A transaction whose work finds it must not commit and still has an answer (a lost fence, a raced version, a refused
// delete): it throws `RolledBack(outcome)`, which rolls the transaction back, and `outcomeOf` turns it into the result.

/** Thrown inside a transaction: roll it back and answer `outcome`. */
export class RolledBack<T> extends Error {
  constructor(readonly outcome: T) {
    super('transaction rolled back');
  }
}

/** The transaction's result, or the outcome a `RolledBack` thrown inside it carried. */
export async function outcomeOf<T>(transaction: Promise<T>): Promise<T> {
  try {
    return await transaction;
  } catch (error) {
    if (error instanceof RolledBack) return error.outcome as T;
    throw error;
  }
}
