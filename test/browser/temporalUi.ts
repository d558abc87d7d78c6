import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';

/**
 * The Temporal UI as an operator opens it (issue 47): the workflow list with the
 * SilicoSummary column after the type (the table's own column setting, kept in the
 * browser's storage), and a workflow's own page.
 */
export const SUMMARY_COLUMNS = [{ label: 'Status' }, { label: 'Type' }, { label: 'SilicoSummary' }, { label: 'Workflow ID' }, { label: 'Start' }];

export async function temporalUiPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1600, height: 900 } });
  await context.addInitScript((columns) => localStorage.setItem('namespace-workflow-table-columns', JSON.stringify({ default: columns })), SUMMARY_COLUMNS);
  const page = await context.newPage();
  page.once('close', () => void context.close().catch(() => undefined));
  return page;
}

/** The list filtered by a visibility query, as the UI's own search box puts it in the address. */
export function listUrl(uiUrl: string, query: string): string {
  return `${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(query)}`;
}

/** A run of a workflow in the UI, on its User Metadata tab: its summary, details and current details. */
export function workflowUrl(uiUrl: string, workflowId: string, runId: string): string {
  return `${uiUrl}/namespaces/default/workflows/${encodeURIComponent(workflowId)}/${runId}/user-metadata`;
}

/**
 * Saves a screenshot into SILICO_SCREENSHOTS (the documentation's images are made this
 * way: `SILICO_SCREENSHOTS=docs/images npm test -- --only temporalUi`); nothing otherwise.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.SILICO_SCREENSHOTS;
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`) });
}

/** Every text the page shows: the UI renders each piece of Markdown in a frame of its own. */
export async function shownText(page: Page): Promise<string> {
  return (await Promise.all(page.frames().map((f) => f.locator('body').innerText().catch(() => '')))).join('\n');
}
