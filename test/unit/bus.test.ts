import { firstValueFrom, take, toArray } from "rxjs";
import { describe, expect, it } from "vitest";
import { createBus, parseEvent } from "../../src/bus/index.js";

describe("bus", () => {
  it("parses events from outside and says what is wrong", () => {
    const ok = parseEvent({ type: "inbound", channel: "cli", chatId: "1", senderId: "u", content: "hi", at: 1 });
    expect(ok.ok && ok.event.type === "inbound" && ok.event.media).toEqual([]);
    expect(parseEvent({ type: "inbound", channel: "cli", senderId: "u", content: "hi", at: 1 })).toEqual({
      ok: false,
      error: "chatId: Invalid input: expected string, received undefined",
    });
    expect(parseEvent({ type: "nope" }).ok).toBe(false);
  });

  it("filters streams by event type with the right types", async () => {
    const bus = createBus();
    const progress = firstValueFrom(bus.ofType("progress", "tool_hint").pipe(take(2), toArray()));
    bus.publish({ type: "inbound", channel: "cli", chatId: "1", senderId: "u", content: "x", media: [], at: 0 });
    bus.publish({ type: "progress", sessionKey: "s", turnId: "t", delta: "he", at: 0 });
    expect(bus.publishUntrusted({ type: "tool_hint", sessionKey: "s", turnId: "t", tool: "exec", hint: "ls", at: 0 })).toEqual({ ok: true });
    expect(bus.publishUntrusted({ type: "progress", delta: 5 }).ok).toBe(false);
    const events = await progress;
    expect(events.map((e) => e.type)).toEqual(["progress", "tool_hint"]);
    bus.close();
  });

  it("delivers each event to the subscribers of its type only, in publish order, and close ends every stream", () => {
    const bus = createBus();
    const seen: string[] = [];
    const every: string[] = [];
    const completed: string[] = [];
    bus.ofType("progress", "outbound").subscribe({ next: (e) => seen.push(e.type), complete: () => completed.push("typed") });
    bus.ofType("inbound").subscribe({ next: (e) => seen.push(`only-${e.type}`), complete: () => completed.push("inbound") });
    bus.events$.subscribe({ next: (e) => every.push(e.type), complete: () => completed.push("all") });
    bus.publish({ type: "progress", sessionKey: "s", turnId: "t", delta: "a", at: 0 });
    bus.publish({ type: "inbound", channel: "cli", chatId: "1", senderId: "u", content: "x", media: [], at: 0 });
    bus.publish({ type: "turn_state", sessionKey: "s", turnId: "t", state: "responded", iteration: 1, at: 0 });
    bus.publish({ type: "outbound", channel: "cli", chatId: "1", content: "hi", media: [], answers: [], deliveryId: "d", at: 0 });
    expect(seen).toEqual(["progress", "only-inbound", "outbound"]);
    expect(every).toEqual(["progress", "inbound", "turn_state", "outbound"]);
    bus.close();
    expect(completed.sort()).toEqual(["all", "inbound", "typed"]);
    // A stream asked for after the close is already complete.
    let late = false;
    bus.ofType("progress").subscribe({ complete: () => (late = true) });
    expect(late).toBe(true);
  });
});
