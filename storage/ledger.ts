import type { Db } from './db/knex.ts';

/**
 * The compute ledger. Every movement is a transaction with entries over four books
 * (funding, available, reserved, spent) that sum to zero; `compute_balances` mirrors the
 * three account books in the same database transaction. A (kind, ref) pair is unique, so
 * a retried movement is recorded once.
 */
export interface Balances {
  available_micros: number;
  reserved_micros: number;
  spent_micros: number;
}

type Book = 'funding' | 'available' | 'reserved' | 'spent';

/** Micro-dollars as the API shows them: US dollars rounded to 6 decimals. */
export function microsToUsd(micros: number): number {
  return Math.round(micros) / 1_000_000;
}

/** Whole micro-dollars from a US-dollar amount given by an operator. */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd)) throw new Error('amount must be a finite number');
  return Math.round(usd * 1_000_000);
}

async function record(
  trx: Db, accountId: string, kind: string, ref: string, entries: Array<[Book, number]>, memo?: string,
): Promise<boolean> {
  const sum = entries.reduce((s, [, a]) => s + a, 0);
  if (sum !== 0) throw new Error(`ledger transaction ${kind}/${ref} does not balance (${sum})`);
  const [txn] = await trx('ledger_txns')
    .insert({ account_id: accountId, kind, ref, memo: memo ?? null })
    .onConflict(['kind', 'ref']).ignore()
    .returning('id');
  if (!txn) return false;
  await trx('ledger_entries').insert(entries.map(([book, amount]) => ({ txn_id: txn.id, account_id: accountId, book, amount_micros: amount })));
  return true;
}

/** Adds compute to an account (operator grant or confirmed purchase); once per ref. */
export async function grantCompute(db: Db, accountId: string, micros: number, ref: string, memo?: string): Promise<boolean> {
  if (!Number.isInteger(micros) || micros <= 0) throw new Error('grant must be a positive whole number of micro-dollars');
  return db.transaction(async (trx) => {
    const fresh = await record(trx, accountId, 'grant', ref, [['funding', -micros], ['available', micros]], memo);
    if (fresh) await trx('compute_balances').where({ account_id: accountId }).increment('available_micros', micros);
    return fresh;
  });
}

export async function getBalances(db: Db, accountId: string): Promise<Balances> {
  const row = await db('compute_balances').where({ account_id: accountId }).first('available_micros', 'reserved_micros', 'spent_micros');
  return row ?? { available_micros: 0, reserved_micros: 0, spent_micros: 0 };
}
