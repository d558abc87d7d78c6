import type { Db } from './db/knex.ts';
import { runPrepared, statement } from './db/prepared.ts';

/**
 * The compute ledger. Every movement is a transaction with entries over four books
 * (funding, available, reserved, spent) that sum to zero; `compute_balances` mirrors the
 * three account books in the same database transaction. A (kind, ref) pair is unique, so
 * a retried movement is recorded once. The movements are database functions (migration
 * 016), each one round trip; these are their typed doors.
 */
export interface Balances {
  available_micros: number;
  reserved_micros: number;
  spent_micros: number;
}

/** Micro-dollars as the API shows them: US dollars rounded to 6 decimals. */
export function microsToUsd(micros: number): number {
  return Math.round(micros) / 1_000_000;
}

/** Whole micro-dollars from a US-dollar amount given by an operator. */
export function usdToMicros(usd: number): number {
  if (!Number.isFinite(usd)) throw new Error('amount must be a finite number');
  return Math.round(usd * 1_000_000);
}

/** Adds compute to an account (operator grant or confirmed purchase); once per ref. */
export async function grantCompute(db: Db, accountId: string, micros: number, ref: string, memo?: string): Promise<boolean> {
  if (!Number.isInteger(micros) || micros <= 0) throw new Error('grant must be a positive whole number of micro-dollars');
  const [row] = await runPrepared<{ ok: boolean }>(db, GRANT, [accountId, micros, ref, memo ?? null]);
  return row!.ok;
}

/**
 * Reserves `micros` for one run (`ref`), once: one conditional UPDATE takes it from the
 * available book only if it is there, so concurrent reservations can never overdraw.
 * Returns false, changing nothing, when the balance cannot cover it. A repeated call for
 * the same ref is a no-op that answers true. (silico_reserve_compute, migration 016.)
 */
export async function reserveCompute(db: Db, accountId: string, micros: number, ref: string): Promise<boolean> {
  if (!Number.isInteger(micros) || micros < 0) throw new Error('reservation must be a whole, non-negative number of micro-dollars');
  const [row] = await runPrepared<{ ok: boolean }>(db, RESERVE, [accountId, micros, ref]);
  return row!.ok;
}

/**
 * Settles a run's reservation, once: charges `actualMicros` (never more than was
 * reserved) and returns the rest to the available book. Returns what was charged and
 * released; a repeated call changes nothing and answers the first settlement.
 */
export async function settleCompute(db: Db, accountId: string, ref: string, actualMicros: number): Promise<{ charged_micros: number; released_micros: number }> {
  if (!Number.isInteger(actualMicros) || actualMicros < 0) throw new Error('charge must be a whole, non-negative number of micro-dollars');
  const [row] = await runPrepared<{ charged_micros: number; released_micros: number }>(db, SETTLE, [accountId, ref, actualMicros]);
  return row!;
}

const GRANT = statement('grant-compute', 'SELECT silico_grant_compute($1, $2, $3, $4) AS ok');
const RESERVE = statement('reserve-compute', 'SELECT silico_reserve_compute($1, $2, $3) AS ok');
const SETTLE = statement('settle-compute', 'SELECT charged_micros, released_micros FROM silico_settle_compute($1, $2, $3)');

export async function getBalances(db: Db, accountId: string): Promise<Balances> {
  const row = await db('compute_balances').where({ account_id: accountId }).first('available_micros', 'reserved_micros', 'spent_micros');
  return row ?? { available_micros: 0, reserved_micros: 0, spent_micros: 0 };
}
