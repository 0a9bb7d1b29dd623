export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls `probe` until it gives a value (not undefined or false), and returns it. A probe that
 * throws counts as not yet (a server still starting). Fails after `timeoutMs`, naming `what`.
 */
export async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000, what = "a condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await Promise.resolve()
      .then(probe)
      .catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(30);
  }
}
