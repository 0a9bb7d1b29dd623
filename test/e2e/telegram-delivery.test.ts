import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pendingOutbox } from "../../src/store/outbox.js";
import { openStore } from "../../src/store/store.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { startFakeTelegram, type FakeTelegram } from "../fixtures/fake-telegram.js";
import { writeTelegramHome } from "../helpers/daemon.js";
import { startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const TOKEN = "123:PARTS";
const PARTS = 3;

/** The model answers "question mN" with PARTS paragraphs of ~3,000 characters: Telegram gets one part per paragraph, each headed "mN partP". */
const longReplies = () =>
  startFakeOpenAi([], (req) => {
    const id = /question (m\d+)/.exec(String(req.body.messages.at(-1)?.content))?.[1] ?? "m?";
    return { content: Array.from({ length: PARTS }, (_, p) => `${id} part${p} ${"lorem ipsum ".repeat(250).trim()}`).join("\n\n") };
  });

/** Accepted sendMessage calls per part ("mN partP" → how many times). */
function partCounts(tg: FakeTelegram): Map<string, number> {
  const counts = new Map<string, number>();
  for (const body of tg.delivered()) {
    const part = /^(m\d+ part\d+) /.exec(String(body.text))?.[1];
    if (part) counts.set(part, (counts.get(part) ?? 0) + 1);
  }
  return counts;
}

describe("Telegram delivery of multi-part replies across kill -9 (real gateway, fake Bot API with latency)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let tg: FakeTelegram | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake, tg]);

  async function home() {
    const dir = await tmp();
    await writeTelegramHome(dir, fake!.url, tg!);
    return dir;
  }

  it("killed at a point between Telegram's acceptance of part 2 and its record: only that part is sent again", async () => {
    fake = await longReplies();
    tg = await startFakeTelegram(TOKEN);
    const dir = await home();
    gateway = await startGateway(dir, { TROUPE_FAULT: "after-part-accepted:2" });
    tg.message("question m1");
    expect((await gateway.exited).signal).toBe("SIGKILL");
    expect([...partCounts(tg).entries()]).toEqual([
      ["m1 part0", 1],
      ["m1 part1", 1],
    ]);

    gateway = await startGateway(dir);
    await until(() => partCounts(tg!).size === PARTS, 20_000, "every part");
    expect(await outboxAfterStop(dir)).toBe(0);
    expect([...partCounts(tg).entries()]).toEqual([
      ["m1 part0", 1],
      ["m1 part1", 2],
      ["m1 part2", 1],
    ]);
  }, 60_000);

  /** Stops the gateway (SIGTERM: it finishes its in-flight delivery) and counts what is left in its outbox. */
  async function outboxAfterStop(dir: string): Promise<number> {
    gateway!.proc.kill("SIGTERM");
    await gateway!.exited;
    gateway = undefined;
    const store = await openStore(join(dir, "store"));
    try {
      return (await pendingOutbox(store, "telegram")).length;
    } finally {
      await store.close();
    }
  }

  it(
    "a sweep of kills at random instants during deliveries (400 ms Bot API): nothing lost, at most one part sent twice per kill",
    async () => {
      const messages = 12;
      const kills = 4;
      const latencyMs = 400;
      fake = await longReplies();
      tg = await startFakeTelegram(TOKEN);
      tg.setSendLatency(latencyMs);
      const dir = await home();
      gateway = await startGateway(dir);
      for (let i = 0; i < messages; i++) tg.message(`question m${i}`, { id: 42, username: "alice" }, { id: 1000 + i, type: "private" });

      const total = messages * PARTS;
      const duplicatedParts = () => [...partCounts(tg!).values()].reduce((sum, n) => sum + n - 1, 0);
      /** Parts sent twice so far, taken at each kill: a kill's duplicates show after the restart that follows it. */
      const marks: number[] = [];
      for (let k = 0; k < kills; k++) {
        // Deliveries are under way in this process (1 to 5 parts arrived since it started, and parts remain), then a random instant.
        const target = tg.delivered().length + 1 + Math.floor(Math.random() * 5);
        await until(() => tg!.delivered().length >= target || partCounts(tg!).size === total, 30_000, "deliveries after the start");
        if (partCounts(tg).size === total) break;
        await sleep(Math.floor(Math.random() * latencyMs * 2));
        marks.push(duplicatedParts());
        gateway.proc.kill("SIGKILL");
        await gateway.exited;
        gateway = await startGateway(dir);
      }
      await until(() => partCounts(tg!).size === total, 60_000, "every part of every reply");
      // Nothing left to send (the stop lets an in-flight send finish, so it is counted too).
      const left = await outboxAfterStop(dir);

      const counts = partCounts(tg);
      const twice = [...counts.entries()].filter(([, n]) => n > 1).map(([part]) => part);
      const messagesTwice = new Set(twice.map((p) => p.split(" ")[0])).size;
      const duplicated = duplicatedParts();
      const killsDone = marks.length;
      const perKill = [...marks.slice(1), duplicated].map((n, i) => n - marks[i]!);
      console.log(
        `telegram kill sweep: ${messages} messages × ${PARTS} parts, ${latencyMs} ms Bot API, ${killsDone} kills: ` +
          `${messagesTwice} of ${messages} messages got a part twice, ${duplicated} parts sent twice (${(duplicated / Math.max(1, killsDone)).toFixed(2)} per kill; per kill: [${perKill.join(", ")}]); ` +
          `${tg.delivered().length} parts accepted for ${total} distinct`,
      );
      expect(left).toBe(0);
      expect(killsDone).toBeGreaterThanOrEqual(2);
      // Nothing lost: every part of every reply arrived.
      for (let i = 0; i < messages; i++) for (let p = 0; p < PARTS; p++) expect(counts.get(`m${i} part${p}`), `m${i} part${p}`).toBeGreaterThanOrEqual(1);
      // The window is one part: at most one part sent twice per kill, and none sent three times.
      expect(duplicated).toBeLessThanOrEqual(killsDone);
      expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    },
    150_000,
  );
});
