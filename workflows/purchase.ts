import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import type { PurchaseActivities, PurchaseState } from '../activities/purchases.ts';
import { explained } from './explain.ts';

const act = proxyActivities<PurchaseActivities>({ startToCloseTimeout: '1 minute', retry: { initialInterval: '1 second', maximumInterval: '30 seconds' } });

/** A verified provider event about the purchase was recorded (its id): apply what is new. */
export const purchaseEventSignal = defineSignal<[string]>('purchaseEvent');

/**
 * One purchase, workflow id `purchase-<id>`: started with its checkout, it applies the
 * provider's confirmed events as they are signalled (crediting the ledger once, taking
 * refunds back) and expires the purchase when no payment came in time. It ends once the
 * purchase is no longer pending; an event that comes later (a refund) is signalled with
 * start, so a new run of the same id applies it. Every effect is keyed in Postgres by the
 * provider's event id and the purchase, so a replayed event changes nothing.
 */
export async function purchaseWorkflow(args: { purchaseId: string }): Promise<string> {
  let signalled = 0;
  setHandler(purchaseEventSignal, () => {
    signalled++;
  });
  let state: PurchaseState | undefined;
  let applied = 0;
  const tell = explained(() => ({
    object: 'purchase', purchase_id: args.purchaseId, status: state?.status ?? 'reading', expires_at: state ? new Date(state.expiresAtMs).toISOString() : null, event_batches_applied: applied,
  }), (v) => (v.status === 'pending'
    ? `**pending**: waiting for the provider's payment until ${v.expires_at}; expired then if none came.`
    : `**${v.status}**.`) + `\n\n${v.event_batches_applied} signalled event batches applied.`);
  state = await act.purchaseState(args.purchaseId);
  tell();
  for (;;) {
    if (signalled > 0) {
      signalled = 0;
      state = await act.applyPurchaseEvents(args.purchaseId);
      applied++;
      tell();
      continue;
    }
    if (state.status !== 'pending') return state.status;
    const left = state.expiresAtMs - Date.now();
    if (!(await condition(() => signalled > 0, Math.max(left, 1000)))) {
      state = await act.expirePurchase(args.purchaseId);
      tell();
    }
  }
}
