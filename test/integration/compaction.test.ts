import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Daemon } from "../../src/daemon-types.js";
import { turnDetail } from "../../src/server/turn-view.js";
import { getSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import { listTurns } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { closeAfterEach } from "../helpers/teardown.js";

const journalKeys = async (d: Daemon, turnId: string) => (await d.store.list("journal", z.unknown(), { prefix: `${turnId}:` })).map((r) => r.key);

describe("bounded storage: finished turns' journals compacted into their summaries", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("keeps the newest storage.keepTurnJournals turns whole; older ones keep their record and the inspector's view, nothing else", async () => {
    fake = await startFakeOpenAi([], (req) => {
      const last = req.body.messages.at(-1);
      return last?.role === "tool" ? { content: "Listed." } : { toolCalls: [{ name: "list_dir", arguments: { path: "." } }] };
    });
    daemon = await startDaemon(await tmp(), fake.url, { config: { storage: { keepTurnJournals: 1, compactTurnsAfterDays: 30 } } });
    for (const text of ["one", "two", "three"]) await replyTo(daemon, await send(daemon, "c1", text));
    const turns = (await listTurns(daemon.store)).sort((a, b) => a.updatedAt - b.updatedAt);
    expect(turns).toHaveLength(3);
    const redact = (t: string) => t;
    const before = await Promise.all(turns.map((t) => turnDetail(daemon!.store, t.turnId, redact)));
    expect(before[0]!.tools.map((t) => t.name)).toEqual(["list_dir"]);
    const journalBefore = await Promise.all(turns.map((t) => journalKeys(daemon!, t.turnId)));
    expect(journalBefore[0]!.some((k) => k.includes(":tool:"))).toBe(true);

    await daemon.upkeep();

    for (const i of [0, 1]) {
      expect(await journalKeys(daemon, turns[i]!.turnId)).toEqual([`${turns[i]!.turnId}:summary`]);
      // The inspector's view of a compacted turn is the one it had before.
      expect(await turnDetail(daemon.store, turns[i]!.turnId, redact)).toEqual(before[i]);
    }
    // The newest turn is left whole; turn records and the conversation stay.
    expect(await journalKeys(daemon, turns[2]!.turnId)).toEqual(journalBefore[2]);
    expect(await listTurns(daemon.store)).toHaveLength(3);
    const history = await sessionMessages(daemon.store, (await getSessionMeta(daemon.store, "api:c1"))!);
    expect(history.filter((m) => m.message.role === "user").map((m) => m.message.content)).toEqual(["one", "two", "three"]);
    // Idempotent: a second pass finds nothing to do, and a new turn still runs.
    await daemon.upkeep();
    expect(await journalKeys(daemon, turns[0]!.turnId)).toEqual([`${turns[0]!.turnId}:summary`]);
    expect((await replyTo(daemon, await send(daemon, "c1", "four"))).content).toBe("Listed.");
  });
});
