import { useState } from 'preact/hooks';
import { clientFor, rememberKey } from '../api.ts';
import { ErrorNotice } from '../components/ErrorNotice.tsx';

/** The key is checked against GET /account before it is kept (in this tab's sessionStorage only). */
export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await clientFor(key.trim()).account.get();
      rememberKey(key.trim());
      setKey('');
      onSignedIn(key.trim());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>Sign in to Silico</h1>
      <form onSubmit={submit}>
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck={false} required value={key} onInput={(e) => setKey(e.currentTarget.value)} aria-describedby="api-key-hint" />
        <p id="api-key-hint" class="hint">Kept in this tab only: closing it signs you out. It is never put in a link.</p>
        <button type="submit" disabled={busy || key.trim() === ''}>{busy ? 'Checking…' : 'Sign in'}</button>
      </form>
      <ErrorNotice error={error} />
    </main>
  );
}
