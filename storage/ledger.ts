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

/**
 * Reserves `micros` for one run (`ref`), once: one conditional UPDATE takes it from the
 * available book only if it is there, so concurrent reservations can never overdraw.
 * Returns false, changing nothing, when the balance cannot cover it. A repeated call for
 * the same ref is a no-op that answers true.
 */
export async function reserveCompute(db: Db, accountId: string, micros: number, ref: string): Promise<boolean> {
  if (!Number.isInteger(micros) || micros < 0) throw new Error('reservation must be a whole, non-negative number of micro-dollars');
  return db.transaction(async (trx) => {
    const fresh = await record(trx, accountId, 'reserve', ref, [['available', -micros], ['reserved', micros]]);
    if (!fresh) return true;
    const moved = await trx('compute_balances')
      .where({ account_id: accountId })
      .andWhere('available_micros', '>=', micros)
      .update({ available_micros: trx.raw('available_micros - ?', [micros]), reserved_micros: trx.raw('reserved_micros + ?', [micros]) });
    if (moved === 0) {
      // Undo the entries written above: the whole reservation did not happen.
      throw new InsufficientCompute();
    }
    return true;
  }).catch((err) => {
    if (err instanceof InsufficientCompute) return false;
    throw err;
  });
}

class InsufficientCompute extends Error {}

/**
 * Settles a run's reservation, once: charges `actualMicros` (never more than was
 * reserved) and returns the rest to the available book. Returns what was charged and
 * released; a repeated call changes nothing and answers the first settlement.
 */
export async function settleCompute(db: Db, accountId: string, ref: string, actualMicros: number): Promise<{ charged_micros: number; released_micros: number }> {
  if (!Number.isInteger(actualMicros) || actualMicros < 0) throw new Error('charge must be a whole, non-negative number of micro-dollars');
  return db.transaction(async (trx) => {
    const reserved = await trx('ledger_entries as e')
      .join('ledger_txns as t', 't.id', 'e.txn_id')
      .where({ 't.kind': 'reserve', 't.ref': ref, 't.account_id': accountId, 'e.book': 'reserved' })
      .first('e.amount_micros');
    if (!reserved) throw new Error(`no reservation ${ref}`);
    const held = Number(reserved.amount_micros);
    const charged = Math.min(actualMicros, held);
    const released = held - charged;
    const fresh = await record(trx, accountId, 'settle', ref, [['reserved', -held], ['spent', charged], ['available', released]]);
    if (fresh) {
      await trx('compute_balances').where({ account_id: accountId }).update({
        reserved_micros: trx.raw('reserved_micros - ?', [held]),
        spent_micros: trx.raw('spent_micros + ?', [charged]),
        available_micros: trx.raw('available_micros + ?', [released]),
      });
      return { charged_micros: charged, released_micros: released };
    }
    const first = await trx('ledger_entries as e').join('ledger_txns as t', 't.id', 'e.txn_id')
      .where({ 't.kind': 'settle', 't.ref': ref }).select('e.book', 'e.amount_micros');
    return {
      charged_micros: Number(first.find((e) => e.book === 'spent')?.amount_micros ?? 0),
      released_micros: Number(first.find((e) => e.book === 'available')?.amount_micros ?? 0),
    };
  });
}

export async function getBalances(db: Db, accountId: string): Promise<Balances> {
  const row = await db('compute_balances').where({ account_id: accountId }).first('available_micros', 'reserved_micros', 'spent_micros');
  return row ?? { available_micros: 0, reserved_micros: 0, spent_micros: 0 };
}
