import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { filter, firstValueFrom } from "rxjs";
import { loadConfig } from "../../src/config/index.js";
import { createDaemon } from "../../src/runtime.js";
import type { Daemon, DaemonOptions } from "../../src/daemon-types.js";
import { telegramOn, writeConfig, writeHome } from "./home.js";

export { telegramOn, writeConfig, writeHome };

/** A data dir for a real gateway (on any free port) with its workspace made; `config` adds the rest (its `gateway` too). */
export async function writeGatewayHome(dir: string, url: string, config: Record<string, unknown> = {}) {
  const { gateway, ...rest } = config;
  await writeHome(dir, url, { config: { gateway: { port: 0, ...(gateway as object | undefined) }, ...rest } });
  await mkdir(join(dir, "workspace"), { recursive: true });
}

/** A data dir for a real gateway (on any free port) with Telegram on the fake Bot API; `config` adds the rest (its `channels` too). */
export async function writeTelegramHome(dir: string, url: string, tg: { token: string; apiRoot: string }, config: Record<string, unknown> = {}) {
  const { channels, ...rest } = config;
  await writeHome(dir, url, { config: { gateway: { port: 0 }, ...rest, channels: { ...(channels as object | undefined), telegram: telegramOn(tg) } } });
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

/** The Telegram channel's options for tests: 1 s long polls, quick backoff, a 1 s watchdog grace. */
export const QUICK_TELEGRAM = { pollTimeoutS: 1, baseBackoffMs: 100, watchdogGraceS: 1 };

/** An in-process daemon with channels.telegram on against a fake Bot API (telegramOn, then `telegram`'s keys), polling quickly. */
export function startTelegramDaemon(dir: string, url: string, tg: { token: string; apiRoot: string }, telegram: Record<string, unknown> = {}, opts: DaemonOptions = {}): Promise<Daemon> {
  return startDaemon(dir, url, { config: { channels: { telegram: { ...telegramOn(tg), ...telegram } } } }, { telegram: QUICK_TELEGRAM, ...opts });
}

