/** Cursor pages: the cursors already visited are kept so Previous goes back exactly. */
export function Pager({ cursors, next, onPage }: { cursors: (string | undefined)[]; next: string | null | undefined; onPage: (cursors: (string | undefined)[]) => void }) {
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={cursors.length <= 1} onClick={() => onPage(cursors.slice(0, -1))}>Previous page</button>
      <span>Page {cursors.length}</span>
      <button type="button" class="secondary" disabled={!next} onClick={() => onPage([...cursors, next ?? undefined])}>Next page</button>
    </nav>
  );
}
