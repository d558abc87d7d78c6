import type { Silico } from '../../client.ts';
import { EXIT, UsageError, type Out } from '../output.ts';

const money = (usd: number) => `$${usd.toFixed(2)}`;

/**
 * `silico buy <usd>`: opens a checkout with the payment provider, prints where to pay, and
 * (unless --no-wait) waits for the provider's confirmation, then prints what was credited
 * and the balance. Exit 1 when the purchase fails or expires unpaid.
 */
export async function buy(client: Silico, amount: string, flags: { wait: boolean; pollMs?: number }, out: Out, signal?: AbortSignal): Promise<number> {
  const usd = Number(amount.replace(/^\$/, ''));
  if (!Number.isFinite(usd)) throw new UsageError(`the amount is US dollars, e.g. silico buy 20 (got ${amount})`);
  const p = await client.purchases.create(usd);
  // Where to pay, at once: a person opens it while this waits (on stderr with --json, whose stdout is the result).
  const where = `checkout  ${p.checkout_url}\npurchase  ${p.purchase_id}: ${money(p.amount_usd)}, pending until the payment provider confirms payment (expires ${p.expires_at})`;
  if (out.json) process.stderr.write(`${where}\n`);
  else process.stdout.write(`${where}\n`);
  if (!flags.wait) {
    out.result(p, () => `not waiting: silico purchases get ${p.purchase_id} shows it`);
    return EXIT.ok;
  }
  out.note('waiting for the payment to be confirmed (Ctrl-C stops waiting; the purchase stays open)');
  const done = await client.purchases.wait(p.purchase_id, { pollMs: flags.pollMs, signal });
  if (done.status !== 'paid') {
    out.result(done, () => `purchase ${done.purchase_id} ${done.status}${done.failure ? `: ${done.failure}` : ''}; nothing was credited`);
    return done.status === 'refunded' ? EXIT.ok : EXIT.runFailed;
  }
  const available = (await client.account.get()).holdings.compute.available_usd;
  out.result(done, () => `paid      ${money(done.credited_usd)} credited; available now ${money(available)}`);
  return EXIT.ok;
}

/** `silico purchases get <id>` and `silico purchases list`. */
export async function purchaseGet(client: Silico, id: string, out: Out): Promise<number> {
  const p = await client.purchases.get(id);
  out.result(p, () => `${p.purchase_id}  ${p.status}  ${money(p.amount_usd)}  credited ${money(p.credited_usd)}${p.refunded_usd ? `  refunded ${money(p.refunded_usd)} (took back ${money(p.recovered_usd)})` : ''}${p.checkout_url ? `\ncheckout  ${p.checkout_url}` : ''}`);
  return EXIT.ok;
}
