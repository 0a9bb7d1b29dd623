import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { firstValueFrom, take, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { createBus } from "../../src/bus/index.js";
import { outboxDeliveredOps, pendingOutbox } from "../../src/store/outbox.js";
import { openStore } from "../../src/store/store.js";
import { messageTool } from "../../src/tools/builtin/message.js";
import { runner, sandboxOf } from "../helpers/tools.js";
import { useTempDirs } from "../helpers/tmp.js";

describe("message tool", () => {
  const tmp = useTempDirs();

  async function setup() {
    const ws = await tmp();
    const store = await openStore(join(ws, ".store"));
    const bus = createBus();
    const run = runner([messageTool({ store, bus, sandbox: sandboxOf(ws), channels: () => ["cli", "telegram"], now: () => 1_000 })], ws);
    return { ws, store, bus, run };
  }

  it("puts the message in the outbox and announces it on the bus, to the current chat by default", async () => {
    const { store, bus, run } = await setup();
    const seen = firstValueFrom(bus.ofType("outbound").pipe(take(1), toArray()));
    expect(await run("message", { content: "halfway there" })).toBe("Message queued for delivery to cli:direct.");
    expect(await pendingOutbox(store)).toEqual([
      { deliveryId: "cli:direct:t1:c1", channel: "cli", chatId: "direct", content: "halfway there", media: [], answers: [], createdAt: 1_000, attempts: 0 },
    ]);
    expect((await seen)[0]).toMatchObject({ type: "outbound", channel: "cli", chatId: "direct", deliveryId: "cli:direct:t1:c1" });
    await store.close();
  });

  it("sends to another channel's chat with media from the workspace", async () => {
    const { ws, store, run } = await setup();
    await writeFile(join(ws, "chart.png"), "png");
    expect(await run("message", { content: "chart", channel: "telegram", chat_id: "42", media: ["chart.png"] }, { callId: "c2" })).toBe(
      "Message queued for delivery to telegram:42 with 1 file(s).",
    );
    expect((await pendingOutbox(store, "telegram"))[0]).toMatchObject({ chatId: "42", media: [join(ws, "chart.png")] });
    await store.close();
  });

  it("passes http(s) URL media through as given, beside workspace files (nanobot: test_message_tool_passes_through_url_media_paths)", async () => {
    const { ws, store, run } = await setup();
    const url = "https://example.com/image.png";
    expect(await run("message", { content: "see attached", channel: "telegram", chat_id: "1", media: [url] })).toBe("Message queued for delivery to telegram:1 with 1 file(s).");
    expect((await pendingOutbox(store, "telegram"))[0]?.media).toEqual([url]);
    // nanobot: test_message_tool_resolves_mixed_media_paths (paths still checked, URLs kept in order)
    await writeFile(join(ws, "relative.png"), "png");
    const media = ["relative.png", "https://example.com/url.png", "http://example.com/http.png"];
    expect(await run("message", { content: "mixed", channel: "telegram", chat_id: "1", media }, { callId: "c2" })).toMatch(/with 3 file\(s\)/);
    expect((await pendingOutbox(store, "telegram")).find((r) => r.content === "mixed")?.media).toEqual([join(ws, "relative.png"), "https://example.com/url.png", "http://example.com/http.png"]);
    // Only http(s): another scheme is a path, and is not found.
    expect(await run("message", { content: "x", media: ["ftp://example.com/a.png"] }, { callId: "c3" })).toMatch(/media file not found: ftp:\/\/example.com\/a.png/);
    await store.close();
  });

  it("refuses unknown channels, a channel without a chat, missing or escaping media", async () => {
    const { store, run } = await setup();
    expect(await run("message", { content: "x", channel: "slack", chat_id: "1" })).toMatch(/unknown channel "slack"; available: cli, telegram/);
    expect(await run("message", { content: "x", channel: "telegram" })).toMatch(/no target chat: give channel and chat_id/);
    expect(await run("message", { content: "x", media: ["nope.png"] })).toMatch(/media file not found: nope.png/);
    expect(await run("message", { content: "x", media: ["/etc/passwd"] })).toMatch(/outside the workspace/);
    expect(await pendingOutbox(store)).toEqual([]);
    await store.close();
  });

  it("takes inline reasoning out of the message, and refuses one that is only reasoning", async () => {
    const { store, run } = await setup();
    expect(await run("message", { content: "<think>they want news</think>Halfway: the model emits <think> at the start." })).toBe("Message queued for delivery to cli:direct.");
    expect((await pendingOutbox(store))[0]?.content).toBe("Halfway: the model emits <think> at the start.");
    expect(await run("message", { content: "<thinking>only this" }, { callId: "c2" })).toMatch(/^Error: the message is empty once its <think> reasoning is removed/);
    expect(await pendingOutbox(store)).toHaveLength(1);
    await store.close();
  });

  it("a repeated call after delivery is recognised and not queued again", async () => {
    const { store, run } = await setup();
    await run("message", { content: "once" });
    await store.batch(outboxDeliveredOps("cli:direct:t1:c1", 2_000), { sync: true });
    expect(await run("message", { content: "once" })).toBe("Message already delivered to cli:direct.");
    expect(await pendingOutbox(store)).toEqual([]);
    await store.close();
  });
});
