import type Stripe from 'stripe';
import type { Db } from '../storage/db/knex.ts';
import { applyPurchaseEvents, expirePurchase, purchaseById, type PurchaseStatus } from '../storage/db/purchases.ts';

/** What the purchase workflow needs of a purchase: where it stands and when it expires. */
export interface PurchaseState { status: PurchaseStatus; expiresAtMs: number }

const stateOf = (p: { status: PurchaseStatus; expires_at: Date }): PurchaseState => ({ status: p.status, expiresAtMs: new Date(p.expires_at).getTime() });

/**
 * A purchase's side effects: reading it, applying the provider's confirmed events to it
 * (the ledger's credit and refunds, in one transaction each), and expiring it, which also
 * closes the provider's checkout so it can no longer be paid.
 */
export function createPurchaseActivities(deps: { db: Db; provider: Stripe | null }) {
  return {
    async purchaseState(purchaseId: string): Promise<PurchaseState> {
      const p = await purchaseById(deps.db, purchaseId);
      if (!p) throw new Error(`no purchase ${purchaseId}`);
      return stateOf(p);
    },
    async applyPurchaseEvents(purchaseId: string): Promise<PurchaseState> {
      return stateOf(await applyPurchaseEvents(deps.db, purchaseId));
    },
    async expirePurchase(purchaseId: string): Promise<PurchaseState> {
      const p = await expirePurchase(deps.db, purchaseId);
      if (p.status === 'expired' && p.checkout_id && deps.provider) {
        // A checkout paid meanwhile cannot be expired: the provider refuses, and its
        // completion event credits the purchase when it comes.
        await deps.provider.checkout.sessions.expire(p.checkout_id).catch((err: { type?: string }) => {
          if (err.type !== 'StripeInvalidRequestError') throw err;
        });
      }
      return stateOf(p);
    },
  };
}

export type PurchaseActivities = ReturnType<typeof createPurchaseActivities>;
