import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Debian's chromium (.ci/run installs it); TROUPE_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.TROUPE_CHROMIUM ?? "/usr/bin/chromium";

/**
 * A real headless Chromium. Missing, it fails loudly (never a skip): the inspector's test is part
 * of the suite. Install it with: apt-get install -y chromium
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install it (apt-get update && apt-get install -y chromium) or set TROUPE_CHROMIUM to its path`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
