/** Buying compute: a checkout with the payment provider, credited once the provider confirms payment. Not offered over MCP. */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { sleep } from '../core/retry.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type Purchase = ListItem<'purchase_list'>;

export class Purchases extends Resource {
  /** POST /purchases: the purchase and its `checkout_url`, where it is paid (a key with the compute:buy scope). */
  create(amountUsd: number, opts?: RequestOptions): Promise<ResponseBody<'purchase_create'>> {
    return this.postJson('/purchases', { amount_usd: amountUsd }, opts);
  }

  /** GET /purchases/{purchase_id}. */
  get(purchaseId: string, opts?: RequestOptions): Promise<ResponseBody<'purchase_get'>> {
    return this.getJson(path`/purchases/${purchaseId}`, undefined, opts);
  }

  /** GET /purchases: newest first. */
  list(params: QueryParams<'purchase_list'> = {}, opts?: RequestOptions): PageRequest<Purchase, WithEnvelope<CursorPageBody<Purchase>>> {
    return this.cursorList<Purchase>('/purchases', params, opts);
  }

  /**
   * Reads the purchase every `pollMs` until it is no longer pending (paid, failed,
   * expired or refunded) and answers it as it then stands; `signal` stops waiting.
   */
  async wait(purchaseId: string, options: { pollMs?: number; signal?: AbortSignal; onPoll?: (p: ResponseBody<'purchase_get'>) => void } = {}): Promise<ResponseBody<'purchase_get'>> {
    for (;;) {
      const p = await this.get(purchaseId, { signal: options.signal });
      options.onPoll?.(p);
      if (p.status !== 'pending') return p;
      await sleep(options.pollMs ?? 2000, options.signal);
    }
  }
}
