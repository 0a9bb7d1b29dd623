import { describe, expect, it } from "vitest";
import { createBus } from "../../src/bus/index.js";
import { createEventLog } from "../../src/server/event-log.js";
import { createSnapshotRedactor } from "../../src/server/snapshot-redact.js";

describe("the event ring buffer", () => {
  const idOf = (e: { type: string; actorId?: string }) => e.actorId ?? e.type;
  const spawned = (actorId: string, at: number) => ({ type: "actor_spawned" as const, actorId, parentId: null, kind: "session", machine: "session", state: "starting", at });

  it("keeps at most maxEvents, oldest out first, and replays by age", () => {
    let now = 10_000;
    const bus = createBus();
    const log = createEventLog(bus, { maxEvents: 3, maxAgeMs: 5_000, now: () => now });
    for (let i = 0; i < 5; i++) bus.publish(spawned(`session:${i}`, 6_000 + i * 1_000));
    expect(log.since(60_000).map(idOf)).toEqual(["session:2", "session:3", "session:4"]);
    now = 11_500;
    // The last 2.5 s: from 9 000 on.
    expect(log.since(2_500).map(idOf)).toEqual(["session:3", "session:4"]);
    // Never further back than maxAgeMs, whatever is asked.
    now = 14_500;
    expect(log.since(60_000).map(idOf)).toEqual(["session:4"]);
    bus.publish({ type: "progress", sessionKey: "k", turnId: "t", delta: "x", at: now });
    expect(log.since(60_000)).toHaveLength(1);
    log.close();
  });
});

describe("snapshot redaction", () => {
  const redact = createSnapshotRedactor({ secrets: ["hunter2-secret-value"], maxString: 20, maxItems: 2 });

  it("drops secrets by key, by known value and by shape; cuts long strings and arrays", () => {
    const out = redact({
      apiKey: "anything",
      headers: { authorization: "Bearer abc" },
      note: "the hunter2-secret-value",
      key: "sk-abcdefghijklmnop",
      long: "x".repeat(100),
      messages: [1, 2, 3, 4],
    }) as Record<string, unknown>;
    expect(out.apiKey).toBe("[REDACTED]");
    expect((out.headers as Record<string, unknown>).authorization).toBe("[REDACTED]");
    expect(out.note).toBe("the [REDACTED]");
    expect(out.key).toBe("[REDACTED]");
    expect(out.long).toBe(`${"x".repeat(20)}… (100 chars)`);
    expect(out.messages).toEqual(["(2 earlier items left out)", 3, 4]);
  });

  it("names actor refs and class instances instead of walking them", () => {
    class Ref {
      id = "session:a";
      secret = "never walked";
    }
    expect(redact({ child: new Ref(), at: new Date(0) })).toEqual({ child: "(session:a)", at: "(Date)" });
  });
});
