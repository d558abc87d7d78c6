import type { ToolContext } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { getFile } from '../../storage/db/files.ts';
import { sha256Hex } from '../../storage/digest.ts';
import { MAX_TREE_BYTES } from '../../storage/trees.ts';

/**
 * The bytes of one of the caller's uploaded files, for a tree that takes it by file_id:
 * re-hashed, so the tree records only bytes that are what the file says (another
 * account's id is a 404).
 */
export async function ownedFileBytes(ctx: ToolContext, fileId: string, param: string): Promise<Buffer> {
  const f = await getFile(ctx.deps.db, fileId, ctx.caller.account.id);
  if (!f) throw errors.notFound('file_not_found', 'file', param);
  if (Number(f.size_bytes) > MAX_TREE_BYTES) throw errors.validation('tree_too_large', `The file is larger than a lab's whole tree may be (${MAX_TREE_BYTES} bytes).`, param);
  const bytes = await ctx.deps.objects.getBytes(f.object_key);
  if (sha256Hex(bytes) !== f.sha256) throw errors.validation('checksum_mismatch', 'The file\'s stored bytes no longer match its digest; nothing was changed.', param);
  return bytes;
}
