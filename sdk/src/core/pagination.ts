/**
 * List calls return a PageRequest, which is both:
 *
 *   const page = await client.runs.list({ limit: 10 });   // one page
 *   page.items; page.has_more; await page.nextPage();
 *
 *   for await (const run of client.runs.list({ limit: 100 })) { ... }   // every item
 *
 * Nothing is fetched until the request is awaited or iterated, so iterating alone never
 * leaves an unobserved first request behind. Cursor lists follow `next_cursor`; the
 * dataset list (limit/offset) advances its offset by the items it received.
 */

/** One page of a list, with the raw answer (envelope included) in `body`. */
export class Page<T, B extends { items: T[]; has_more: boolean } = { items: T[]; has_more: boolean }> implements AsyncIterable<T> {
  readonly body: B;
  private readonly fetchNext: (() => Promise<Page<T, B>>) | null;
  constructor(
    body: B,
    fetchNext: (() => Promise<Page<T, B>>) | null,
  ) {
    this.body = body;
    this.fetchNext = fetchNext;
  }

  get items(): T[] {
    return this.body.items;
  }

  get has_more(): boolean {
    return this.body.has_more;
  }

  /** The opaque cursor of the next page (cursor lists), else null. */
  get next_cursor(): string | null {
    const c = (this.body as { next_cursor?: unknown }).next_cursor;
    return typeof c === 'string' ? c : null;
  }

  hasNextPage(): boolean {
    return this.fetchNext !== null;
  }

  /** The following page, or null after the last one. */
  async nextPage(): Promise<Page<T, B> | null> {
    return this.fetchNext ? this.fetchNext() : null;
  }

  /** Items of this page and of every page after it. */
  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* this.items;
    let page = await this.nextPage();
    while (page) {
      yield* page.items;
      page = await page.nextPage();
    }
  }
}

/**
 * A lazy list call: await it for the first page, iterate it for every item. It is a
 * full Promise of the first page (then/catch/finally), so it also works wherever a
 * Promise is expected (Promise.all, assert.rejects).
 */
export class PageRequest<T, B extends { items: T[]; has_more: boolean } = { items: T[]; has_more: boolean }> implements Promise<Page<T, B>>, AsyncIterable<T> {
  private promise: Promise<Page<T, B>> | undefined;
  readonly [Symbol.toStringTag] = 'PageRequest';

  private readonly first: () => Promise<Page<T, B>>;
  constructor(first: () => Promise<Page<T, B>>) {
    this.first = first;
  }

  private started(): Promise<Page<T, B>> {
    this.promise ??= this.first();
    return this.promise;
  }

  then<R1 = Page<T, B>, R2 = never>(
    onfulfilled?: ((page: Page<T, B>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.started().then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<Page<T, B> | R> {
    return this.started().catch(onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<Page<T, B>> {
    return this.started().finally(onfinally);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this;
  }
}

/** Pages of a cursor list: `fetch(cursor)` reads one page; a null cursor is the first. */
export function cursorPages<T, B extends { items: T[]; has_more: boolean; next_cursor?: string | null }>(
  fetch: (cursor: string | null) => Promise<B>, start: string | null = null,
): PageRequest<T, B> {
  const load = async (cursor: string | null): Promise<Page<T, B>> => {
    const body = await fetch(cursor);
    const next = body.has_more && body.next_cursor ? body.next_cursor : null;
    return new Page<T, B>(body, next ? () => load(next) : null);
  };
  return new PageRequest(() => load(start));
}

/** Pages of a limit/offset list: the next offset is this one plus the items received. */
export function offsetPages<T, B extends { items: T[]; has_more: boolean }>(
  fetch: (offset: number) => Promise<B>, start = 0,
): PageRequest<T, B> {
  const load = async (offset: number): Promise<Page<T, B>> => {
    const body = await fetch(offset);
    const next = body.has_more && body.items.length > 0 ? offset + body.items.length : null;
    return new Page<T, B>(body, next === null ? null : () => load(next));
  };
  return new PageRequest(() => load(start));
}
