// A data dir's config, written without loading troupe's modules: the in-process benches run troupe
// from its bundle (test/bench/harness.ts), and a second copy run from source would only cost memory.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Writes a data dir's config.json as given. */
export const writeConfig = (dir: string, config: unknown) => writeFile(join(dir, "config.json"), JSON.stringify(config));

/** A data dir whose config points at the fake model. */
export async function writeHome(dir: string, url: string, extra: { defaults?: Record<string, unknown>; config?: Record<string, unknown> } = {}) {
  await writeConfig(dir, {
    agents: { defaults: { provider: "custom", model: "fake-model", ...extra.defaults } },
    providers: { custom: { apiBase: url, apiKey: "k" } },
    ...extra.config,
  });
}

/**
 * channels.telegram on a fake Bot API, open to every sender unless told. Not streaming (nanobot's default, and troupe's, streams a reply
 * by editing one message): these tests read each reply as its sendMessage calls; streaming has tests of its own.
 */
export const telegramOn = (tg: { token: string; apiRoot: string }, allowFrom: string[] = ["*"]) => ({ enabled: true, token: tg.token, apiRoot: tg.apiRoot, allowFrom, streaming: false });
