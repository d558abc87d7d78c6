import type { Knex } from 'knex';

/**
 * Purchased compute. A purchase is a checkout with the payment provider for an amount in
 * whole cents; it credits the ledger only when the provider's signed event confirms
 * payment (`purchase` transactions, funding -> available, once per purchase), and a
 * refund takes back what is left of that credit (`refund` transactions, available ->
 * funding, never more than the account has available), recording what it could not.
 *
 * `purchase_events` keeps each verified provider event once, by the provider's event id:
 * a replayed or duplicated event finds its row and changes nothing. An event that names
 * a payment no purchase knows yet (a refund before the completion) is kept with its
 * payment id and no purchase, and applied when the completion names that payment.
 */
export async function up(k: Knex): Promise<void> {
  await k.schema.createTable('purchases', (t) => {
    t.uuid('id').primary();
    t.text('account_id').notNullable().references('accounts.id');
    t.text('key_id').notNullable();
    t.bigInteger('amount_micros').notNullable();
    t.text('currency').notNullable().defaultTo('usd');
    t.text('status').notNullable().checkIn(['pending', 'paid', 'failed', 'refunded', 'expired']);
    t.text('provider').notNullable().defaultTo('stripe');
    t.text('checkout_id').unique();
    t.text('checkout_url');
    t.text('payment_id').unique();
    t.bigInteger('credited_micros').notNullable().defaultTo(0);
    t.bigInteger('refunded_micros').notNullable().defaultTo(0);
    t.bigInteger('recovered_micros').notNullable().defaultTo(0);
    t.text('failure');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('paid_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.index(['account_id', 'created_at', 'id']);
  });
  await k.schema.createTable('purchase_events', (t) => {
    t.text('id').primary();
    t.text('type').notNullable();
    // What the event means for a purchase: paid, failed, expired, refunded, or ignored.
    t.text('effect').notNullable().checkIn(['paid', 'failed', 'expired', 'refunded', 'ignored']);
    // A refund's cumulative amount refunded on the payment so far (the provider's figure).
    t.bigInteger('refunded_total_micros');
    t.bigInteger('amount_micros');
    t.uuid('purchase_id').references('purchases.id');
    t.text('payment_id');
    t.jsonb('object').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(k.fn.now());
    // Why the provider says a payment failed (a failed payment's event).
    t.text('failure');
    t.timestamp('applied_at', { useTz: true });
    // What applying it did ('credited', 'refunded ... took back ...', 'ignored: ...').
    t.text('outcome');
    t.index(['purchase_id']);
    t.index(['payment_id']);
  });
  await k.raw(`
    -- Credits a confirmed purchase (funding -> available), once per purchase.
    CREATE FUNCTION silico_credit_purchase(p_account text, p_micros bigint, p_purchase text)
    RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
      IF p_micros IS NULL OR p_micros <= 0 THEN
        RAISE EXCEPTION 'a purchase credits a positive whole number of micro-dollars';
      END IF;
      IF silico_ledger_record(p_account, 'purchase', 'purchase:' || p_purchase, NULL, ARRAY['funding', 'available'], ARRAY[-p_micros, p_micros]) IS NULL THEN
        RETURN false;
      END IF;
      UPDATE compute_balances SET available_micros = available_micros + p_micros WHERE account_id = p_account;
      RETURN true;
    END $$;

    -- Takes back up to p_wanted of a refunded purchase (available -> funding), once per
    -- ref: what the account still has available, never what is reserved or spent.
    -- Returns what it took (0 when it took nothing, or when the ref was taken before).
    CREATE FUNCTION silico_debit_refund(p_account text, p_wanted bigint, p_ref text)
    RETURNS bigint LANGUAGE plpgsql AS $$
    DECLARE
      available bigint;
      taken bigint;
    BEGIN
      SELECT b.available_micros INTO available FROM compute_balances b WHERE b.account_id = p_account FOR UPDATE;
      taken := least(greatest(p_wanted, 0), coalesce(available, 0));
      IF taken = 0 THEN
        RETURN 0;
      END IF;
      IF silico_ledger_record(p_account, 'refund', p_ref, NULL, ARRAY['available', 'funding'], ARRAY[-taken, taken]) IS NULL THEN
        RETURN 0;
      END IF;
      UPDATE compute_balances SET available_micros = available_micros - taken WHERE account_id = p_account;
      RETURN taken;
    END $$;
  `);
}

export async function down(k: Knex): Promise<void> {
  await k.raw('DROP FUNCTION IF EXISTS silico_debit_refund(text, bigint, text); DROP FUNCTION IF EXISTS silico_credit_purchase(text, bigint, text);');
  await k.schema.dropTableIfExists('purchase_events');
  await k.schema.dropTableIfExists('purchases');
}
