import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createBus } from "../../src/bus/index.js";
import type { ChannelInbound } from "../../src/channels/channel.js";
import { albumOf, gatherAlbums, joinAnswers, mergeAlbum, unitsOf } from "../../src/channels/telegram-album.js";
import { takeInAnswer } from "../../src/channels/telegram-intake.js";
import { createInbound } from "../../src/inbound.js";
import { silentLogger } from "../../src/log/logger.js";
import { sessionInbox, wasSeen } from "../../src/store/inbox.js";
import { openStore, type StoreOp } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";

const text = (id: number, chat = 42) => ({ update_id: id, message: { message_id: id, chat: { id: chat, type: "private" }, text: `t${id}` } });
const item = (id: number, group: string, chat = 42) => ({ update_id: id, message: { message_id: id, chat: { id: chat, type: "private" }, media_group_id: group, photo: [{ file_id: `f${id}` }] } });
const ids = (updates: unknown[]) => updates.map((u) => (u as { update_id: number }).update_id);

describe("Telegram albums", () => {
  const tempDir = useTempDirs();

  it("an album is its chat and media_group_id; a malformed update is in none", () => {
    expect(albumOf(item(1, "g"))).toBe("42:g");
    expect(albumOf(item(1, "g", 43))).toBe("43:g");
    expect(albumOf(text(1))).toBeUndefined();
    for (const bad of [null, "x", { update_id: 1, message: null }, { update_id: 1, message: { media_group_id: "g", chat: null } }, { update_id: 1, message: { media_group_id: 7, chat: { id: 1 } } }]) expect(albumOf(bad)).toBeUndefined();
  });

  it("joins the second answer to the first by update_id, stopping before an album the first answer did not hold", () => {
    const first = [item(1, "a"), text(2, 43)];
    expect(ids(joinAnswers(first, [item(1, "a"), text(2, 43), item(3, "a"), text(4, 44)]))).toEqual([1, 2, 3, 4]);
    // A new album (b) and what follows it wait for the next poll, which gives b a wait of its own.
    expect(ids(joinAnswers(first, [item(1, "a"), text(2, 43), item(3, "a"), item(4, "b"), item(5, "a"), text(6, 44)]))).toEqual([1, 2, 3]);
    // The same media_group_id in another chat is another album.
    expect(ids(joinAnswers(first, [item(3, "a", 43)]))).toEqual([1, 2]);
    // A second answer that lost some of the first (another poller took them) loses nothing of the first.
    expect(ids(joinAnswers(first, [item(3, "a")]))).toEqual([1, 2, 3]);
  });

  it("waits for the rest of an album only when an answer holds one; a failed second ask keeps the first answer", async () => {
    const signal = new AbortController().signal;
    let asked = 0;
    expect(ids(await gatherAlbums([text(1)], async () => (asked++, []), signal))).toEqual([1]);
    expect(asked).toBe(0);
    expect(ids(await gatherAlbums([item(1, "a")], async () => (asked++, [item(1, "a"), item(2, "a")]), signal))).toEqual([1, 2]);
    expect(asked).toBe(1);
    const errors: unknown[] = [];
    expect(ids(await gatherAlbums([item(1, "a")], () => Promise.reject(new Error("502")), signal, (e) => errors.push(e)))).toEqual([1]);
    expect(errors).toHaveLength(1);
    const stopping = new AbortController();
    stopping.abort();
    await expect(gatherAlbums([item(1, "a")], async () => [], stopping.signal)).rejects.toThrow();
  });

  it("reads an album's items together at the place of its last item, everything else in order", () => {
    const units = unitsOf([item(1, "a"), text(2, 43), item(3, "b", 44), item(4, "a"), text(5, 43)]);
    expect(units.map(ids)).toEqual([[2], [3], [1, 4], [5]]);
  });

  it("merges an album's messages: texts joined by newlines, files once and in order, the others' ids kept", () => {
    const m = (id: number, content: string, media: string[]): ChannelInbound => ({ chatId: "42", senderId: "42|alice", content, media, messageId: `42:${id}` });
    expect(mergeAlbum([])).toBeUndefined();
    expect(mergeAlbum([m(1, "solo", ["a"])])).toEqual(m(1, "solo", ["a"]));
    expect(mergeAlbum([m(1, "[image: a]", ["a"]), m(2, "look\n[image: b]", ["b", "a"]), m(3, "", ["c"])])).toEqual({
      chatId: "42",
      senderId: "42|alice",
      content: "[image: a]\nlook\n[image: b]",
      media: ["a", "b", "c"],
      messageId: "42:1",
      otherMessageIds: ["42:2", "42:3"],
    });
  });

  it("never stores an offset past an album item not yet taken in", async () => {
    const writes: Array<{ messages: string[]; offset?: number }> = [];
    const offsetOf = (ops: StoreOp[] = []) => (ops[0] as { value?: { offset: number } } | undefined)?.value?.offset;
    // One answer: an album item, a voice note of another chat (read on its own, after what came before), the album's last item.
    const voice = { update_id: 2, message: { message_id: 2, chat: { id: 43, type: "private" }, voice: { file_id: "v" } } };
    await takeInAnswer([item(1, "a"), voice, item(3, "a"), text(4, 44)], 1, {
      read: async (u) => {
        const id = (u as { update_id: number }).update_id;
        return { updateId: id, message: { chatId: "c", senderId: "s", content: `u${id}`, messageId: `m${id}` } };
      },
      carriesMedia: (u) => u === voice || albumOf(u) !== undefined,
      accept: async (messages, ops) => void writes.push({ messages: messages.map((m) => m.content), offset: offsetOf(ops) }),
      offsetOp: (offset) => ({ type: "put", sublevel: "meta", key: "o", value: { offset } }),
      storeOffset: async (offset) => void writes.push({ messages: [], offset }),
      taken: async () => false,
    });
    expect(writes).toEqual([
      // The voice note is in, but update 1 (the album's first item) is not: the offset stays at it.
      { messages: ["u2"], offset: undefined },
      { messages: ["u1\nu3"], offset: 4 },
      { messages: ["u4"], offset: 5 },
    ]);
  });

  it("a redelivery of an album's later item is recognised as taken in", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const routed: string[] = [];
    const inbound = createInbound({ store, bus: createBus(), logger: silentLogger(), accepting: () => true, route: (_key, m) => routed.push(m.id) });
    const album = { chatId: "42", senderId: "alice", content: "[image: a]\n[image: b]", media: ["a", "b"], messageId: "42:7", otherMessageIds: ["42:8"] };
    expect(await inbound.acceptAll("telegram", [album])).toEqual(["telegram:42:7"]);
    await inbound.acceptAll("telegram", [{ chatId: "42", senderId: "alice", content: "[image: b]", media: ["b"], messageId: "42:8" }]);
    // Within one batch too: an album and its item apart.
    await inbound.acceptAll("telegram", [
      { ...album, messageId: "42:20", otherMessageIds: ["42:21"] },
      { chatId: "42", senderId: "alice", content: "x", messageId: "42:21" },
    ]);
    expect(routed).toEqual(["telegram:42:7", "telegram:42:20"]);
    expect((await sessionInbox(store, "telegram:42")).map((m) => m.id)).toEqual(["telegram:42:7", "telegram:42:20"]);
    await store.close();
  });

  it("an album redelivered with an item more (its first write's neighbour failed) takes the new item in, not dropped with those stored", async () => {
    const store = await openStore(join(await tempDir(), "store"));
    const inbound = createInbound({ store, bus: createBus(), logger: silentLogger(), accepting: () => true, route: () => undefined });
    let failOn: number | undefined = 4;
    let offset: number | undefined;
    const deps = {
      read: async (u: unknown) => {
        const { update_id: id, message } = u as ReturnType<typeof item>;
        if (id === failOn) throw new Error("killed while downloading album b");
        return { updateId: id, message: { chatId: String(message.chat.id), senderId: "s", content: `photo ${id}`, media: [`f${id}`], messageId: `${message.chat.id}:${id}` } };
      },
      carriesMedia: (u: unknown) => albumOf(u) !== undefined,
      accept: async (messages: ChannelInbound[], ops: StoreOp[] = []) => void (await inbound.acceptAll("telegram", messages, ops)),
      offsetOp: (o: number): StoreOp => ({ type: "put", sublevel: "meta", key: "o", value: { o } }),
      storeOffset: async (o: number) => void (offset = o),
      taken: async (u: unknown) => {
        const m = (u as ReturnType<typeof item>).message;
        return wasSeen(store, `telegram:${m.chat.id}:${m.message_id}`);
      },
    };
    // Two chats' albums at once: b (chat 43) items 1 and 4, a (chat 42) items 2 and 3. a is stored, b's download fails: the offset stays at 1.
    await expect(takeInAnswer([item(1, "b", 43), item(2, "a"), item(3, "a"), item(4, "b", 43)], undefined, deps)).rejects.toThrow();
    expect((await sessionInbox(store, "telegram:42")).map((m) => m.content)).toEqual(["photo 2\nphoto 3"]);
    // Redelivered from update 1, with a's third photo (update 5) come meanwhile.
    failOn = undefined;
    await takeInAnswer([item(1, "b", 43), item(2, "a"), item(3, "a"), item(4, "b", 43), item(5, "a")], offset, deps);
    expect((await sessionInbox(store, "telegram:42")).map((m) => m.content)).toEqual(["photo 2\nphoto 3", "photo 5"]);
    expect((await sessionInbox(store, "telegram:43")).map((m) => m.content)).toEqual(["photo 1\nphoto 4"]);
    await store.close();
  });
});

