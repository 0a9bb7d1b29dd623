import { join } from "node:path";
import { createActor } from "xstate";
import { afterEach, describe, expect, it } from "vitest";
import { createChannelActor } from "../../actors/channel.js";
import { createBus } from "../../src/bus/index.js";
import { DeliveryRejectedError, type Channel } from "../../src/channels/channel.js";
import { pendingOutbox, queueDelivery, wasDelivered, type OutboxRecord } from "../../src/store/outbox.js";
import { openStore, type Store } from "../../src/store/store.js";
import { startFakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { sleep, until } from "../helpers/wait.js";

const record = (id: string, content: string): OutboxRecord => ({ deliveryId: id, channel: "fake", chatId: "c", content, media: [], answers: [], createdAt: Date.now(), attempts: 0 });

/** A channel whose platform fails the first `failures` sends of each message, and refuses "bad". */
function flakyChannel(failures: number) {
  const sent: string[] = [];
  const tries = new Map<string, number>();
  const channel: Channel = {
    name: "fake",
    start: async () => {},
    stop: async () => {},
    async send(r) {
      if (r.content === "bad") throw new DeliveryRejectedError("chat not found");
      const n = (tries.get(r.deliveryId) ?? 0) + 1;
      tries.set(r.deliveryId, n);
      if (n <= failures) throw new Error("502 Bad Gateway");
      sent.push(r.content);
    },
  };
  return { channel, sent, tries };
}

function run(channel: Channel, s: Store, bus = createBus(), retryBaseMs = 40) {
  const logic = createChannelActor({ channels: new Map([["fake", channel]]), store: s, bus, accept: async () => {}, sendProgress: false, sendToolHints: false, retryBaseMs });
  return { actor: createActor(logic.logic, { input: { name: "fake" } }).start(), bus };
}

describe("channel actor: outbox delivery", () => {
  const tmp = useTempDirs();
  let store: Store | undefined;
  afterEach(async () => store?.close());

  it("retries a failed delivery with backoff and deletes the entry only once it is accepted", async () => {
    store = await openStore(join(await tmp(), "store"));
    const flaky = flakyChannel(2);
    const { actor, bus } = run(flaky.channel, store);
    await sleep(20);
    await queueDelivery(store, bus, record("d1", "hello"));
    await sleep(60);
    const waiting = await pendingOutbox(store, "fake");
    expect(waiting.map((r) => [r.deliveryId, r.attempts])).toEqual([["d1", 2]]);
    expect(waiting[0]?.nextAttemptAt).toBeGreaterThan(Date.now());
    await sleep(250);
    expect(flaky.sent).toEqual(["hello"]);
    expect(await pendingOutbox(store, "fake")).toEqual([]);
    expect(await wasDelivered(store, "d1")).toBe(true);
    actor.stop();
  });

  it("keeps the retry deadline across a restart of the channel, and drops what the platform refuses", async () => {
    store = await openStore(join(await tmp(), "store"));
    const first = run(flakyChannel(100).channel, store, createBus(), 400);
    await sleep(20);
    await queueDelivery(store, first.bus, record("d2", "later"));
    await queueDelivery(store, first.bus, record("d3", "bad"));
    await sleep(30);
    first.actor.stop();
    const stored = await pendingOutbox(store, "fake");
    expect(stored.map((r) => r.deliveryId)).toEqual(["d2"]);
    const deadline = stored[0]!.nextAttemptAt!;

    expect(deadline - Date.now()).toBeGreaterThan(200);
    const healthy = flakyChannel(0);
    const second = run(healthy.channel, store);
    await sleep(100);
    // Not before its stored deadline...
    expect(healthy.sent).toEqual([]);
    await sleep(Math.max(0, deadline - Date.now()) + 100);
    // ...and then exactly once.
    expect(healthy.sent).toEqual(["later"]);
    expect(await pendingOutbox(store, "fake")).toEqual([]);
    second.actor.stop();
  });
});

describe("channel actor: start-up", () => {
  const tmp = useTempDirs();
  let store: Store | undefined;
  afterEach(async () => store?.close());

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
