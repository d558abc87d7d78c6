import { randomBytes } from 'node:crypto';
import path from 'node:path';
import getPort from 'get-port';
import { waitFor, type Supervisor } from './processes.ts';
import { keptSecret } from './secretsKey.ts';

/** The key the local stack gives its services for the mock provider (stripe-mock accepts any test key). */
export const MOCK_SECRET_KEY = 'sk_test_silicolocal';


/**
 * The payment provider of the local stack when no provider key is configured: Stripe's
 * own mock server (`stripe-mock`, built from its Go module), which answers the provider's
 * API statelessly and sends no events. The environment it returns points the api and
 * workers at it; the signing secret is the one the tests (or a developer) sign events with.
 */
export async function startPaymentProvider(sup: Supervisor, opts: { bin: string; dataDir: string }): Promise<Record<string, string>> {
  const [port, tlsPort] = [await getPort(), await getPort()];
  // Its HTTPS listener is not used, but it always opens one (on every interface unless told): kept on loopback too.
  const proc = sup.start('stripe-mock', opts.bin, ['-http-addr', `127.0.0.1:${port}`, '-https-addr', `127.0.0.1:${tlsPort}`], { env: { PATH: process.env.PATH ?? '', HOME: opts.dataDir } });
  let exited: string | undefined;
  void proc.exited.then((c) => (exited = `exited with ${c}`));
  const base = `http://127.0.0.1:${port}`;
  await waitFor('stripe-mock', async () => (await fetch(`${base}/v1/balance`, { headers: { Authorization: `Bearer ${MOCK_SECRET_KEY}` } })).ok, 60_000, () => exited);
  return {
    SILICO_STRIPE_SECRET_KEY: MOCK_SECRET_KEY,
    SILICO_STRIPE_API_BASE: base,
    // The data dir's signing secret of provider events, made on its first start and kept after.
    SILICO_STRIPE_WEBHOOK_SECRET: await keptSecret(path.join(opts.dataDir, 'stripe-webhook.secret'), () => `whsec_${randomBytes(24).toString('base64url')}`),
  };
}
