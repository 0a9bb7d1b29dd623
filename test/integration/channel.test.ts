import { join } from "node:path";
import { createActor } from "xstate";
import { describe, expect, it } from "vitest";
import { createChannelActor } from "../../actors/channel.js";
import { createBus } from "../../src/bus/index.js";
import { DeliveryRejectedError, type Channel } from "../../src/channels/channel.js";
import { pendingOutbox, queueDelivery, wasDelivered, type OutboxRecord } from "../../src/store/outbox.js";
import { openStore, type Store } from "../../src/store/store.js";
import { startFakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const record = (id: string, content: string): OutboxRecord => ({ deliveryId: id, channel: "fake", chatId: "c", content, media: [], answers: [], createdAt: Date.now(), attempts: 0 });

/** A channel whose platform fails the first `failures` sends of each message, and refuses "bad"; `times` are when sends were tried. */
function flakyChannel(failures: number) {
  const sent: string[] = [];
  const times: number[] = [];
  const tries = new Map<string, number>();
  const channel: Channel = {
    name: "fake",
    start: async () => {},
    stop: async () => {},
    async send(r) {
      if (r.content === "bad") throw new DeliveryRejectedError("chat not found");
      times.push(Date.now());
      const n = (tries.get(r.deliveryId) ?? 0) + 1;
      tries.set(r.deliveryId, n);
      if (n <= failures) throw new Error("502 Bad Gateway");
      sent.push(r.content);
    },
  };
  return { channel, sent, tries, times };
}

function run(channel: Channel, s: Store, bus = createBus(), retryBaseMs = 40) {
  const logic = createChannelActor({ channels: new Map([["fake", channel]]), store: s, bus, accept: async () => {}, sendProgress: false, sendToolHints: false, retryBaseMs });
  return { actor: createActor(logic.logic, { input: { name: "fake" } }).start(), bus };
}

describe("channel actor: outbox delivery", () => {
  const tmp = useTempDirs();
  let store: Store | undefined;
  closeAfterEach(() => [store]);

  it("retries a failed delivery with backoff and deletes the entry only once it is accepted", async () => {
    store = await openStore(join(await tmp(), "store"));
    const s = store;
    const flaky = flakyChannel(2);
    const { actor, bus } = run(flaky.channel, s);
    await queueDelivery(s, bus, record("d1", "hello"));
    const waiting = await until(async () => (await pendingOutbox(s, "fake")).find((r) => r.attempts === 2), 5_000, "the second failure stored");
    // The stored deadline of the third try is the second failure plus twice the base delay.
    expect(waiting.nextAttemptAt! - flaky.times[1]!).toBeGreaterThanOrEqual(80 - 5);
    await until(() => wasDelivered(s, "d1"), 5_000, "the delivery");
    expect(flaky.sent).toEqual(["hello"]);
    expect(await pendingOutbox(s, "fake")).toEqual([]);
    // Each retry waited its backoff: 40 ms, then 80 ms.
    expect(flaky.times[1]! - flaky.times[0]!).toBeGreaterThanOrEqual(40 - 2);
    expect(flaky.times[2]! - flaky.times[1]!).toBeGreaterThanOrEqual(80 - 2);
    actor.stop();
  });

  it("keeps the retry deadline across a restart of the channel, and drops what the platform refuses", async () => {
    store = await openStore(join(await tmp(), "store"));
    const s = store;
    const failing = flakyChannel(100);
    const first = run(failing.channel, s, createBus(), 400);
    await queueDelivery(s, first.bus, record("d2", "later"));
    await queueDelivery(s, first.bus, record("d3", "bad"));
    const stored = await until(async () => {
      const pending = await pendingOutbox(s, "fake");
      return pending.length === 1 && pending[0]!.attempts === 1 ? pending : undefined;
    }, 5_000, "d2 waiting for its retry and d3 dropped");
    first.actor.stop();
    expect(stored.map((r) => r.deliveryId)).toEqual(["d2"]);
    expect(failing.tries.get("d2")).toBe(1);
    const deadline = stored[0]!.nextAttemptAt!;

    const healthy = flakyChannel(0);
    const second = run(healthy.channel, s);
    await until(() => wasDelivered(s, "d2"), 5_000, "the retried delivery");
    // Not before its stored deadline, and then exactly once.
    expect(healthy.times[0]).toBeGreaterThanOrEqual(deadline - 2);
    expect(healthy.sent).toEqual(["later"]);
    expect(await pendingOutbox(s, "fake")).toEqual([]);
    second.actor.stop();
  });
});

/** A channel that sends a message's "|"-separated parts one by one, reporting each, and fails the sends `failAt` lists (once each). */
function partsChannel(failAt: Array<{ id: string; part: number }> = []) {
  const sent: string[] = [];
  const seen: Array<{ id: string; delivered: number[] }> = [];
  const channel: Channel = {
    name: "fake",
    start: async () => {},
    stop: async () => {},
    async send(r, onPartDelivered) {
      seen.push({ id: r.deliveryId, delivered: [...(r.deliveredParts ?? [])] });
      for (const [i, part] of r.content.split("|").entries()) {
        if (r.deliveredParts?.includes(i)) continue;
        const f = failAt.findIndex((x) => x.id === r.deliveryId && x.part === i);
        if (f >= 0) {
          failAt.splice(f, 1);
          throw new Error("502 Bad Gateway");
        }
        sent.push(part);
        await onPartDelivered?.(i);
      }
    },
  };
  return { channel, sent, seen };
}

describe("channel actor: start-up and per-part progress", () => {
  const tmp = useTempDirs();
  let store: Store | undefined;
  closeAfterEach(() => [store]);

  it("delivers a reply stored between its start-up read of the outbox and its subscription, and one both read and announced once", async () => {
    store = await openStore(join(await tmp(), "store"));
    const real = store;
    const bus = createBus();
    const healthy = flakyChannel(0);
    // The outbox read of the start-up: one reply is stored and announced just before it, one just after it (before the read returns).
    const spied: Store = {
      ...real,
      async list(sublevel, schema, opts) {
        if (sublevel !== "outbox") return real.list(sublevel, schema, opts);
        await queueDelivery(real, bus, record("both", "read and announced"));
        const listed = await real.list(sublevel, schema, opts);
        await queueDelivery(real, bus, record("late", "stored after the read"));
        return listed;
      },
    };
    const logic = createChannelActor({ channels: new Map([["fake", healthy.channel]]), store: spied, bus, accept: async () => {}, sendProgress: false, sendToolHints: false, retryBaseMs: 40 });
    const actor = createActor(logic.logic, { input: { name: "fake" } }).start();
    await until(async () => (await wasDelivered(real, "late")) && (await wasDelivered(real, "both")), 5_000, "both deliveries");
    await queueDelivery(real, bus, record("after", "announced later"));
    await until(() => wasDelivered(real, "after"), 5_000, "the later delivery");
    actor.stop();
    await logic.drain();
    expect(healthy.sent.sort()).toEqual(["announced later", "read and announced", "stored after the read"]);
    expect(await pendingOutbox(real, "fake")).toEqual([]);
  });

  it("records each part as it is accepted, so a retry after a failure on a later part sends only the rest", async () => {
    store = await openStore(join(await tmp(), "store"));
    const parts = partsChannel([
      { id: "p1", part: 1 },
      { id: "p1", part: 2 },
    ]);
    const { actor, bus } = run(parts.channel, store);
    await queueDelivery(store, bus, record("p1", "one|two|three"));
    const s = store;
    const afterFirst = await until(async () => (await pendingOutbox(s, "fake")).find((r) => r.attempts === 1), 5_000, "the first failure stored");
    expect(afterFirst.deliveredParts).toEqual([0]);
    await until(() => wasDelivered(s, "p1"), 5_000, "the delivery");
    actor.stop();
    // Each part reached the platform once; each attempt began where the last one stopped.
    expect(parts.sent).toEqual(["one", "two", "three"]);
    expect(parts.seen).toEqual([
      { id: "p1", delivered: [] },
      { id: "p1", delivered: [0] },
      { id: "p1", delivered: [0, 1] },
    ]);
  });

  it("a channel that delivers chats side by side keeps each chat in order, and starts nothing queued once stopped", async () => {
    store = await openStore(join(await tmp(), "store"));
    const s = store;
    const sent: string[] = [];
    const gates = new Map<string, () => void>();
    const channel: Channel = {
      name: "fake",
      parallelChats: true,
      start: async () => {},
      stop: async () => {},
      // Each send waits until the test lets that message through.
      send: (r) => new Promise<void>((resolve) => gates.set(r.content, () => (sent.push(r.content), resolve()))),
    };
    const { actor, bus } = run(channel, s);
    const to = (chatId: string, id: string) => ({ ...record(id, id), chatId });
    await queueDelivery(s, bus, to("a", "a1"));
    await queueDelivery(s, bus, to("a", "a2"));
    await queueDelivery(s, bus, to("b", "b1"));
    // b's reply is not held up by a's; a's second waits for its first.
    await until(() => gates.has("a1") && gates.has("b1"), 5_000, "a1 and b1 under way");
    expect(gates.has("a2")).toBe(false);
    gates.get("b1")!();
    await until(() => wasDelivered(s, "b1"), 5_000, "b1 delivered");
    expect(gates.has("a2")).toBe(false);
    gates.get("a1")!();
    await until(() => gates.has("a2"), 5_000, "a2 under way once a1 was accepted");
    gates.get("a2")!();
    await until(() => wasDelivered(s, "a2"), 5_000, "a2 delivered");
    expect(sent).toEqual(["b1", "a1", "a2"]);
    // Stopped with a3 under way and a4 queued behind it: a4 is not started (it stays in the outbox for the next start).
    await queueDelivery(s, bus, to("a", "a3"));
    await queueDelivery(s, bus, to("a", "a4"));
    await until(() => gates.has("a3"), 5_000, "a3 under way");
    actor.stop();
    gates.get("a3")!();
    await sleep(100);
    expect(gates.has("a4")).toBe(false);
    expect((await pendingOutbox(s, "fake")).map((r) => r.deliveryId)).toContain("a4");
  });
});

describe("daemon shutdown with a delivery in flight", () => {
  const tmp = useTempDirs();

  it("waits for the channel to finish it before the store closes: nothing is re-queued or lost", async () => {
    const fake = await startFakeOpenAi([{ content: "the answer" }]);
    const dir = await tmp();
    const sent: string[] = [];
    const slow: Channel = {
      name: "slow",
      start: async () => {},
      stop: async () => {},
      send: async (r) => {
        await sleep(300);
        sent.push(r.content);
      },
    };
    const daemon = await startDaemon(dir, fake.url, {}, { channels: [slow] });
    const id = await daemon.accept("slow", { chatId: "c", senderId: "u", content: "question" });
    await replyTo(daemon, id);
    await sleep(50);
    await daemon.shutdown();
    await fake.close();
    expect(sent).toEqual(["the answer"]);
    const store = await openStore(join(dir, "store"));
    expect(await pendingOutbox(store)).toEqual([]);
    await store.close();
  });
});
