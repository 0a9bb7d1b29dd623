import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { filter, firstValueFrom } from "rxjs";
import { loadConfig } from "../../src/config/index.js";
import { createDaemon, type Daemon, type DaemonOptions } from "../../src/runtime.js";

/** A data dir whose config points at the fake model. */
export async function writeHome(dir: string, url: string, extra: { defaults?: Record<string, unknown>; config?: Record<string, unknown> } = {}) {
  await writeFile(
    join(dir, "config.json"),
    JSON.stringify({
      agents: { defaults: { provider: "custom", model: "fake-model", ...extra.defaults } },
      providers: { custom: { apiBase: url, apiKey: "k" } },
      ...extra.config,
    }),
  );
}

export async function startDaemon(dir: string, url: string, extra: Parameters<typeof writeHome>[2] = {}, opts: DaemonOptions = {}): Promise<Daemon> {
  await writeHome(dir, url, extra);
  return createDaemon(await loadConfig({ TROUPE_HOME: dir }), { stream: false, ...opts });
}

/** The reply that answers a message id. */
export const replyTo = (daemon: Daemon, messageId: string) =>
  firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.includes(messageId))));

/** A message from the API channel, as the control API would take it in; resolves with its id. */
export const sendApi = (daemon: Daemon, chatId: string, content: string) => daemon.accept("api", { chatId, senderId: "u", content });
