/**
 * The console's one way to the API: @silico/sdk, with the key the user signed in with.
 * The key lives in this tab's sessionStorage only (gone when the tab closes; never in a
 * URL, a cookie or a log).
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { Silico } from '@silico/sdk';

const STORAGE_KEY = 'silico.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function rememberKey(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

export function clientFor(apiKey: string): Silico {
  return new Silico({ apiKey, baseUrl: `${location.origin}/v1`, maxRetries: 2, timeoutMs: 30_000 });
}

export interface Session {
  client: Silico;
  /** Re-reads the account bar (after a run is accepted or settles). */
  refreshAccount: () => void;
  signOut: () => void;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside a signed-in console');
  return s;
}
