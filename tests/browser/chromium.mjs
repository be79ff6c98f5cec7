// Debian's Chromium driven by playwright-core (never a downloaded browser):
// launch flags that work on a closed network as root (docs: TOOLCHAIN.md).
import { chromium } from 'playwright-core';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.WQ_CHROMIUM ?? '/usr/bin/chromium';
export const chromiumAvailable = () => existsSync(CHROMIUM);

export async function launchChromium() {
  const userDataDir = mkdtempSync(path.join(tmpdir(), 'wq-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return context;
}

/** Collects console errors and page errors of a page. */
export function watchErrors(page) {
  const errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(String(e)));
  return errors;
}
