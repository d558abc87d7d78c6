import Stripe from 'stripe';
import type { PaymentsConfig } from './config.ts';

/**
 * The payment provider's client (Stripe's official library), shared by the api (checkouts,
 * verifying events) and the workers (expiring a checkout). In the local stack it talks to
 * `stripe-mock` (the provider's own mock server); elsewhere to Stripe. Null when no key is
 * configured: buying is then not offered.
 */
export function paymentProvider(cfg: PaymentsConfig): Stripe | null {
  if (!cfg.stripeSecretKey) return null;
  const base = cfg.stripeApiBase ? new URL(cfg.stripeApiBase) : null;
  return new Stripe(cfg.stripeSecretKey, {
    // The library retries network failures itself, with the same idempotency key.
    maxNetworkRetries: 2,
    timeout: 10_000,
    telemetry: false,
    ...(base ? { host: base.hostname, port: Number(base.port), protocol: base.protocol.replace(':', '') as 'http' | 'https' } : {}),
  });
}

/** Whole cents of a US-dollar amount, and the micro-dollars the ledger counts. */
export const CENT_MICROS = 10_000;
