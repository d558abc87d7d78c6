import type { ObjectStore } from '../storage/objects.ts';

/** Bounded content in reads (docs/contract/gaps.md): 64 KiB, flagged when cut. */
export const READ_BOUND = 64 * 1024;

/**
 * The first READ_BOUND bytes of a stored object of `size` bytes, as text when they are
 * UTF-8 without NULs (a character cut at the bound does not make them binary), else null.
 */
export async function boundedContent(objects: ObjectStore, key: string, size: number): Promise<{ head: Buffer; text: string | null; truncated: boolean }> {
  const { body } = await objects.getStream(key, size > 0 ? `bytes=0-${Math.min(size, READ_BOUND) - 1}` : undefined);
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  const head = Buffer.concat(chunks);
  let text: string | null;
  try {
    text = head.includes(0) ? null : new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: size > READ_BOUND });
  } catch {
    text = null;
  }
  return { head, text, truncated: size > READ_BOUND };
}
