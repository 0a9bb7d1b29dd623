import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { readSse } from "../../src/server/sse.js";
import { runCli, TROUPE_BIN } from "../helpers/cli.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { launchChromium } from "../helpers/browser.js";
import { writeHome } from "../helpers/daemon.js";
import { sendMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { until } from "../helpers/wait.js";

/** Screenshots land here (kept by CI as test artifacts). */
const ARTIFACTS = process.env.TROUPE_TEST_ARTIFACTS ?? join(process.cwd(), "test-artifacts");

interface StateEvent {
  actorId: string;
  kind: string;
  state: string;
  at: number;
}

/**
 * The inspector page in a real headless Chromium against a real gateway: the token gate, the live
 * tree, a turn's state changes within a second, its statechart with the current state highlighted.
 */
describe("the inspector page (real Chromium, real gateway)", () => {
  let fake: FakeOpenAi;
  let g: GatewayProcess;
  let home: string;
  let browser: Browser;
  let token: string;
  const stateEvents: StateEvent[] = [];
  let events: AbortController;

  beforeAll(async () => {
    // First, so a missing Chromium fails the suite at once, loudly.
    browser = await launchChromium();
    // Each step of the turn takes a while, so the page can be watched in each state.
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.at(-1);
      if (last?.role === "tool") return { content: "There are files.", delayMs: 1_500 };
      return { toolCalls: [{ name: "exec", arguments: { command: "sleep 2" } }], delayMs: 1_500 };
    });
    home = await mkdtemp(join(tmpdir(), "troupe-inspector-"));
    await writeHome(home, fake.url, { config: { gateway: { port: 0 } } });
    g = await startGateway(home);
    token = (await readFile(join(home, "gateway.token"), "utf8")).trim();
    // The daemon's own record of every state change, to time the page against.
    events = new AbortController();
    void (async () => {
      const res = await fetch(`${g.url}/api/events`, { headers: g.auth, signal: events.signal });
      for await (const m of readSse(res.body!)) if (m.event === "actor_state") stateEvents.push(m.data as StateEvent);
    })().catch(() => undefined);
  });

  afterAll(async () => {
    events?.abort();
    await browser?.close();
    g?.proc.kill("SIGTERM");
    await g?.exited;
    await fake?.close();
    if (home) await rm(home, { recursive: true, force: true });
  });

  const open = async (): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => void (m.type() === "error" && !m.text().includes("401") && errors.push(m.text())));
    (page as Page & { errors: string[] }).errors = errors;
    await page.goto(`${g.url}/inspector`);
    return page;
  };

  it("asks for the token and shows nothing without it; a wrong one is refused", async () => {
    const page = await open();
    await page.waitForSelector("#token-form:not([hidden])");
    expect(await page.isHidden("#app")).toBe(true);
    const api = await page.evaluate(async () => (await fetch("/api/actors")).status);
    expect(api).toBe(401);
    await page.fill("#token", "not-the-token");
    await page.click("#token-form button[type=submit]");
    await page.locator("#token-error", { hasText: "refused" }).waitFor();
    expect(await page.isHidden("#app")).toBe(true);
    expect(await page.evaluate("sessionStorage.length")).toBe(0);
    await page.close();
  });

  it("with the token: the live tree, a turn's state changes within a second, its statechart highlighted", async () => {
    const page = await open();
    await page.fill("#token", token);
    await page.click("#token-form button[type=submit]");
    await page.waitForSelector('#tree li[data-actor-id="supervisor"]');
    await page.waitForSelector('#tree li[data-actor-id="channel:api"]');
    await page.waitForSelector('#status[data-status="live"]');
    // The token is kept for this tab: a reload goes straight in.
    await page.reload();
    await page.waitForSelector('#tree li[data-actor-id="supervisor"]');
    await page.waitForSelector('#status[data-status="live"]');

    // When each of the turn's states first shows in the page, by the same clock as the daemon's.
    // The tree shows each actor's current state (a state that lasts a millisecond may fall between
    // two frames); the selected actor's list of transitions shows every one. (Browser code as a
    // string: this project's types have no DOM.)
    await page.evaluate(`
      window.seen = {};
      new MutationObserver(() => {
        for (const li of document.querySelectorAll('#tree li[data-kind="turn"]')) window.seen[li.dataset.state] ??= Date.now();
        for (const li of document.querySelectorAll("#transitions li")) {
          const to = / → (\\S+)/.exec(li.textContent);
          if (to) window.seen[to[1]] ??= Date.now();
        }
      }).observe(document.querySelector("main"), { childList: true, subtree: true, attributes: true });
    `);
    const { replied } = sendMessage(g, "api:web", "what is in my workspace?");
    const turn = await page.waitForSelector('#tree li[data-actor-id^="turn:api:web:"]');
    const turnId = await turn.getAttribute("data-actor-id");
    expect(await page.isVisible('#tree li[data-actor-id="session:api:web"]')).toBe(true);
    // It hangs under its session.
    expect(await page.$(`#tree li[data-actor-id="session:api:web"] li[data-actor-id="${turnId}"]`)).not.toBeNull();
    await page.click(`#tree li[data-actor-id="${turnId}"] > .row`);
    await page.waitForSelector("#chart svg.statechart[data-machine=turn]");
    await page.waitForSelector('#chart svg.statechart[data-current="awaiting_tools"]', { timeout: 20_000 });
    expect(await page.$('#chart .state.current[data-state="awaiting_tools"]')).not.toBeNull();
    await mkdir(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, "inspector-turn.png"), fullPage: true });
    expect(await replied).toBe(true);
    await page.waitForSelector('#chart svg.statechart[data-current="responded"]', { timeout: 20_000 });

    const seen = (await page.evaluate("window.seen")) as Record<string, number>;
    for (const state of ["awaiting_tools", "tools_completed", "responded"]) {
      const change = await until(() => stateEvents.find((e) => e.actorId === turnId && e.state === state), 10_000, `the daemon's ${state} event`);
      expect(seen[state], `${state} shown in the page`).toBeDefined();
      expect(seen[state]! - change.at, `${state} shown within a second`).toBeLessThan(1_000);
    }
    expect((page as Page & { errors: string[] }).errors).toEqual([]);
    await page.close();
  });

  it("a session shows its transcript and turns; a turn its checkpoints and tool journal", async () => {
    const page = await open();
    await page.fill("#token", token);
    await page.click("#token-form button[type=submit]");
    // The session passivates after a while; send again so it is live.
    const { replied } = sendMessage(g, "api:web", "and now?");
    await page.click('#tree li[data-actor-id="session:api:web"] > .row', { timeout: 20_000 });
    expect(await replied).toBe(true);
    await page.locator("#transcript", { hasText: "There are files." }).waitFor({ timeout: 20_000 });
    await page.click("#turns tbody tr:last-child");
    await page.locator("#checkpoints tbody tr").nth(4).waitFor();
    const states = await page.$$eval("#checkpoints tbody tr td:nth-child(2)", (tds) => tds.map((td) => td.textContent));
    expect(states).toEqual(["awaiting_model", "awaiting_tools", "tools_completed", "awaiting_model", "responded"]);
    const tool = await page.$$eval("#tools tbody tr td", (tds) => tds.map((td) => td.textContent));
    expect(tool.slice(1, 4)).toEqual(["exec", "sleep 2", "completed"]);
    expect(Number(/(\d+) ms/.exec(tool[4] ?? "")?.[1])).toBeGreaterThanOrEqual(1_900);
    // Time travel: stepping back highlights the checkpoint's state.
    await page.click("#step-prev");
    await page.click("#step-prev");
    await page.waitForSelector('#turn-chart svg.statechart[data-current="tools_completed"]');
    await page.screenshot({ path: join(ARTIFACTS, "inspector-session.png"), fullPage: true });
    await page.close();
  });

  it("the events API replays the last minutes; /api/machines is troupe inspect --format json", async () => {
    const res = await fetch(`${g.url}/api/events?since=10`, { headers: g.auth });
    const replayed: Array<{ event: string; data: { actorId?: string; state?: string; replayed?: boolean } }> = [];
    for await (const m of readSse(res.body!)) {
      if (m.event === "tree") break;
      replayed.push(m as (typeof replayed)[number]);
    }
    await res.body?.cancel();
    // Earlier tests' turns, every state of them, with the actor's id and parent.
    const turnStates = replayed.filter((m) => m.event === "actor_state" && m.data.actorId?.startsWith("turn:api:web:")).map((m) => m.data.state);
    expect(turnStates).toEqual(expect.arrayContaining(["awaiting_model", "awaiting_tools", "tools_completed", "responded"]));
    expect(replayed.every((m) => m.data.replayed === true)).toBe(true);
    const bad = await fetch(`${g.url}/api/events?since=soon`, { headers: g.auth });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toContain("since must be a number of minutes");

    const machines = (await (await fetch(`${g.url}/api/machines`, { headers: g.auth })).json()) as { machines: unknown };
    const cli = await runCli(["inspect", "--format", "json"], { TROUPE_HOME: home });
    expect(machines.machines).toEqual(JSON.parse(cli.stdout));
  });

  it("troupe inspect --live prints the running daemon's actor tree and refreshes it", async () => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
    const proc = spawn(process.execPath, [TROUPE_BIN, "inspect", "--live", "--interval", "0.2"], { env: { ...clean, TROUPE_HOME: home } });
    let out = "";
    proc.stdout.on("data", (c: Buffer) => (out += c.toString()));
    proc.stderr.on("data", (c: Buffer) => (out += c.toString()));
    try {
      // Two refreshes, each with the tree and its states.
      await until(() => out.split("turns: ").length > 2, 30_000, `two refreshes of --live:\n${out}`);
      expect(out).toMatch(/^supervisor \[supervisor\] running/m);
      expect(out).toMatch(/^ {2}channel:api \[channel\] active/m);
    } finally {
      proc.kill("SIGTERM");
    }
  });
});
