import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook } from '../../sdk/src/webhookVerify.ts';

/**
 * The soak's webhook receiver: every delivery's signature is checked with the SDK's own
 * verifier against the secret of the endpoint it names; the ids of the events it took are
 * kept (deliveries are at least once, so a repeat is counted, not refused).
 */
export class WebhookReceiver {
  /** Event ids received with a valid signature, and how many times each. */
  readonly received = new Map<string, number>();
  badSignatures = 0;
  private readonly secrets = new Map<string, string>();
  private server?: Server;

  /** The URL an endpoint of `name` points at; deliveries to it are verified with `secret`. */
  endpoint(name: string, secret: string): void {
    this.secrets.set(name, secret);
  }

  async listen(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const secret = this.secrets.get((req.url ?? '').split('/').pop() ?? '');
        try {
          const event = verifyWebhook(Buffer.concat(chunks), req.headers['silico-signature'] as string | undefined, secret ?? '');
          this.received.set(event.id, (this.received.get(event.id) ?? 0) + 1);
          res.writeHead(200).end();
        } catch {
          this.badSignatures += 1;
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
