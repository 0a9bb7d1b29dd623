import { describe, expect, it } from "vitest";
import type { ActorsResponse } from "../../src/cli/daemon.js";
import { liveLines } from "../../src/cli/inspect.js";
import type { Daemon } from "../../src/daemon-types.js";
import type { ActorNode } from "../../src/server/actor-view.js";
import { startControlServer, type ControlServer } from "../../src/server/http.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { startTelegramDaemon } from "../helpers/daemon.js";
import { closeAfterEach } from "../helpers/teardown.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closedPort } from "../helpers/ports.js";

/**
 * A Telegram channel that cannot reach its Bot API says so where its state is read (the daemon's
 * channel states, the actor tree of /api/actors), not only in the log: backing off, since when, and
 * the last error (redacted). nanobot's channel keeps polling and logs the error; troupe shows it too.
 */
const TOKEN = "123456789:AAF-secret-bot-token-0123456789abcdefXYZ";
const AUTH = { authorization: "Bearer t0ken-for-the-test" };


describe("a Telegram channel that cannot reach its Bot API", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let daemon: Daemon | undefined;
  let server: ControlServer | undefined;
  closeAfterEach(() => [server, daemon, tg, fake]);

  const actors = async () => (await (await fetch(`${server!.url}/api/actors`, { headers: AUTH })).json()) as ActorsResponse & { root: ActorNode };
  const telegramNode = async () => {
    const { root, channels = [] } = await actors();
    return { node: root.children.find((c) => c.id === "channel:telegram"), channel: channels.find((c) => c.name === "telegram") };
  };

  it("never connected (API port closed): backing off, since when and why (token redacted), in the channel states and the actor tree", async () => {
    fake = await startFakeOpenAi([]);
    const t0 = Date.now();
    daemon = await startTelegramDaemon(await tmp(), fake.url, { token: TOKEN, apiRoot: `http://127.0.0.1:${await closedPort()}` });
    server = await startControlServer(daemon, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    const state = await until(() => daemon!.channels().find((c) => c.name === "telegram" && c.state === "backing_off"), 20_000, "telegram backing off");
    expect(state.error).toMatch(/^network error: .*ECONNREFUSED/);
    expect(state.error).toContain("/bot[REDACTED]/getMe");
    expect(state.since).toBeGreaterThanOrEqual(t0);
    // It keeps failing: the stretch's start stays, the failures add up.
    const later = await until(() => {
      const c = daemon!.channels().find((c) => c.name === "telegram");
      return c?.failures !== undefined && c.failures > state.failures! && c;
    });
    expect(later).toMatchObject({ state: "backing_off", since: state.since });
    const { node, channel } = await telegramNode();
    expect(channel).toMatchObject({ state: "backing_off" });
    expect(node).toMatchObject({ state: "backing_off", since: state.since, error: expect.stringMatching(/ECONNREFUSED/) });
    expect(JSON.stringify(await telegramNode())).not.toContain(TOKEN);
    // troupe inspect --live draws it so, and says why.
    const live = liveLines(await actors(), server!.url);
    expect(live).toContainEqual(expect.stringMatching(/^ {2}channel:telegram \[channel\] backing_off \(\d+s\)$/));
    expect(live).toContainEqual(expect.stringMatching(/^BACKING OFF: channel:telegram since \d+s \(\d+ failures?\): network error: .*\/bot\[REDACTED\]\/getMe failed/));
  });

  it("GET /health lists each channel beside its existing fields: Telegram backing off (since, failures, why, token redacted), then started once it is up", async () => {
    fake = await startFakeOpenAi([]);
    tg = await startFakeTelegram(TOKEN);
    tg.down(502);
    const t0 = Date.now();
    daemon = await startTelegramDaemon(await tmp(), fake.url, tg);
    server = await startControlServer(daemon, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    // /health needs no token: a monitor reads it as it is.
    const health = async () => (await (await fetch(`${server!.url}/health`)).json()) as Record<string, unknown> & { channels?: Array<Record<string, unknown>> };
    const down = await until(async () => {
      const h = await health();
      return h.channels?.some((c) => c.name === "telegram" && c.state === "backing_off") && h;
    }, 20_000, "telegram backing off in /health");
    expect(down).toMatchObject({ ok: true, pid: process.pid, dataDir: daemon.loaded.paths.dataDir, store: expect.any(Object), disk: expect.any(Object) });
    expect(Object.keys(down)).toEqual(expect.arrayContaining(["ok", "version", "pid", "dataDir", "uptimeMs", "store", "disk"]));
    const telegram = down.channels!.find((c) => c.name === "telegram")!;
    expect(telegram).toMatchObject({ state: "backing_off", error: "Bad Gateway", failures: expect.any(Number) });
    expect(telegram.since).toBeGreaterThanOrEqual(t0);
    expect(down.channels!.find((c) => c.name === "api")).toMatchObject({ state: "started", error: null });
    tg.down(undefined);
    const up = await until(async () => {
      const h = await health();
      return h.channels?.some((c) => c.name === "telegram" && c.state === "started") && h;
    }, 20_000, "telegram started in /health");
    expect(up.channels!.find((c) => c.name === "telegram")).toMatchObject({ state: "started", error: null });
  });

  it("GET /health redacts the token in a channel's error", async () => {
    fake = await startFakeOpenAi([]);
    daemon = await startTelegramDaemon(await tmp(), fake.url, { token: TOKEN, apiRoot: `http://127.0.0.1:${await closedPort()}` });
    server = await startControlServer(daemon, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    const text = await until(async () => {
      const body = await (await fetch(`${server!.url}/health`)).text();
      return body.includes('"backing_off"') && body;
    }, 20_000, "telegram backing off in /health");
    expect(text).toMatch(/network error: [^"]*\/bot\[REDACTED\]\/getMe/);
    expect(text).not.toContain(TOKEN);
  });

  it("down (every call answers 502), then up: backing off with the Bot API's error, then started and active again", async () => {
    fake = await startFakeOpenAi([]);
    tg = await startFakeTelegram(TOKEN);
    tg.down(502);
    daemon = await startTelegramDaemon(await tmp(), fake.url, tg);
    server = await startControlServer(daemon, { host: "127.0.0.1", port: 0, token: "t0ken-for-the-test" });
    const state = await until(() => daemon!.channels().find((c) => c.name === "telegram" && c.state === "backing_off"), 20_000, "telegram backing off");
    expect(state.error).toBe("Bad Gateway");
    expect((await telegramNode()).node).toMatchObject({ state: "backing_off", error: "Bad Gateway" });
    tg.down(undefined);
    await until(() => daemon!.channels().find((c) => c.name === "telegram" && c.state === "started"), 20_000, "telegram started");
    const { node, channel } = await telegramNode();
    expect(channel).toMatchObject({ state: "started", error: null });
    expect(node?.state).toBe("active");
    expect(node?.error).toBeUndefined();
  });
});
