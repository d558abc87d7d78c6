import { fileTypeFromBuffer } from 'file-type';

/**
 * A file's format from its first bytes and its name: binary formats by signature
 * (file-type), text formats by extension once the bytes are known to be text. Content is
 * never parsed beyond this.
 */
export async function sniffFormat(head: Buffer, name: string): Promise<{ format: string; content_type: string }> {
  const ext = name.toLowerCase().split('.').pop() ?? '';
  const typed = await fileTypeFromBuffer(head);
  if (typed) return { format: typed.ext, content_type: typed.mime };
  const isText = !head.includes(0) && !new TextDecoder('utf-8', { fatal: false }).decode(head).includes('\uFFFD');
  if (!isText) return { format: 'binary', content_type: 'application/octet-stream' };
  const text = head.toString('utf8').trimStart();
  if (ext === 'json' || ((text.startsWith('{') || text.startsWith('[')) && ext !== 'csv')) return { format: 'json', content_type: 'application/json' };
  if (['fa', 'fasta', 'fna', 'faa'].includes(ext) || text.startsWith('>')) return { format: 'fasta', content_type: 'text/x-fasta' };
  if (ext === 'pdb' || /^(HEADER|ATOM  |HETATM|REMARK)/.test(text)) return { format: 'pdb', content_type: 'chemical/x-pdb' };
  if (ext === 'csv') return { format: 'csv', content_type: 'text/csv' };
  if (ext === 'tsv') return { format: 'tsv', content_type: 'text/tab-separated-values' };
  if (ext === 'yaml' || ext === 'yml') return { format: 'yaml', content_type: 'application/yaml' };
  return { format: 'text', content_type: 'text/plain; charset=utf-8' };
}

/** One CSV cell: a number as written, anything else as its JSON text, quoted. */
export function csvCell(v: unknown): string {
  return typeof v === 'number' ? String(v) : JSON.stringify(JSON.stringify(v ?? null));
}
