import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { getJob, listJobs } from "../../src/cron/jobs.js";
import { createCronService } from "../../src/cron/service.js";
import { getConsolidationState } from "../../src/memory/session-state.js";
import { mapNanobotJob } from "../../src/nanobot/cron.js";
import { parseNanobotCronStore } from "../../src/nanobot/record.js";
import { IMPORT_MARKER, importNanobot, importRecordSchema } from "../../src/nanobot/import.js";
import { parseNanobotSession } from "../../src/nanobot/sessions.js";
import { appendMessagesOps, getSessionMeta, newSessionMeta, sessionMessages } from "../../src/store/sessions.js";
import { openStore, type Store } from "../../src/store/store.js";
import { useTempDirs } from "../helpers/tmp.js";

const NOW = Date.UTC(2026, 5, 1);
const jsonl = (...records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join("\n")}\n`;
const meta = (key: string | undefined, lastConsolidated: unknown) => ({ _type: "metadata", ...(key ? { key } : {}), created_at: "2026-01-01T10:00:00.123456", updated_at: "2026-01-02T10:00:00", metadata: {}, last_consolidated: lastConsolidated });
const msgs = (n: number) => Array.from({ length: n }, (_, i) => ({ role: "user", content: `msg${i}`, timestamp: "2026-01-01T10:00:01" }));
const build = (() => {
  const service = createCronService({ store: {} as Store, defaultTz: "UTC", now: () => NOW });
  return service.buildJob;
})();

describe("a nanobot session file (nanobot/session/manager.py)", () => {
  // nanobot tests/session/test_consolidated_offset_clamp.py: an offset that is no whole number in range is reset, the messages kept.
  it.each([["999"], [null], [0.5], [true], [999], [-5]])("last_consolidated %j is reset to 0 and the messages kept", (offset) => {
    const s = parseNanobotSession(jsonl(meta("chan:chat", offset), ...msgs(3)), "chan_chat.jsonl");
    expect(s).toMatchObject({ key: "chan:chat", lastConsolidated: 0 });
    expect(typeof s !== "string" && s.messages.map((m) => m.message.content)).toEqual(["msg0", "msg1", "msg2"]);
  });

  it("keeps a valid last_consolidated (4 of 10), counted in the messages kept when a line is left out", () => {
    expect(parseNanobotSession(jsonl(meta("chan:chat", 4), ...msgs(10)), "x.jsonl")).toMatchObject({ lastConsolidated: 4 });
    const withBad = `${jsonl(meta("chan:chat", 4), ...msgs(2))}{not json\n${jsonl({ role: "robot", content: "?" }, ...msgs(8))}`;
    const s = parseNanobotSession(withBad, "x.jsonl");
    if (typeof s === "string") throw new Error(s);
    expect(s.lastConsolidated).toBe(3);
    expect(s.messages).toHaveLength(10);
    expect(s.skipped).toEqual(["line 4: not valid JSON", 'line 5: role "robot" is none of user, assistant, tool, system']);
  });

  it("reads times, tool calls and results, and takes the key from the file name when the metadata has none (v0.1.x)", () => {
    const s = parseNanobotSession(
      jsonl(meta(undefined, 0), { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "exec", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", name: "exec", content: { ok: 1 } }),
      "telegram_42.jsonl",
    );
    if (typeof s === "string") throw new Error(s);
    expect(s.key).toBe("telegram:42");
    expect(s.createdAt).toBe(new Date(2026, 0, 1, 10, 0, 0, 123).getTime());
    expect(s.messages.map((m) => m.message)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "exec", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", name: "exec", content: '{"ok":1}' },
    ]);
  });
});

describe("a nanobot cron job (nanobot/cron/types.py, service.py)", () => {
  const job = (over: Record<string, unknown>) => ({ id: "j1", name: "t", enabled: true, schedule: { kind: "every", everyMs: 60_000 }, payload: { kind: "agent_turn", message: "hi" }, state: {}, ...over });

  it("a legacy telegram job keeps its schedule, target, deliver and last run (tests/cron/test_cron_persistence.py's job)", () => {
    const m = mapNanobotJob(
      job({ name: "Daily Loving Message", schedule: { kind: "cron", expr: "0 10 * * *", tz: "Asia/Kuwait" }, payload: { kind: "agent_turn", message: "hello", deliver: true, channel: "telegram", to: "user-1" }, state: { lastRunAtMs: 50, lastStatus: "ok" }, createdAtMs: 7 }),
      build,
      NOW,
    );
    expect(m.skip).toBeUndefined();
    expect(m.job).toMatchObject({ id: "j1", name: "Daily Loving Message", message: "hello", schedule: { kind: "cron", expr: "0 10 * * *", tz: "Asia/Kuwait" }, deliver: true, target: { channel: "telegram", chatId: "user-1" }, enabled: true, createdAt: 7, lastRunAt: 50, lastStatus: "ok" });
    expect(m.job!.nextRunAt).toBeGreaterThan(NOW);
  });

  it("a session-bound job (v0.3.0) replies in its chat; a disabled one stays disabled; numeric strings read as numbers", () => {
    const m = mapNanobotJob(job({ enabled: false, schedule: { kind: "every", everyMs: "60000" }, payload: { kind: "agent_turn", message: "hi", sessionKey: "telegram:9", originChannel: "telegram", originChatId: "9" } }), build, NOW);
    expect(m.job).toMatchObject({ schedule: { kind: "every", everyS: 60 }, deliver: true, target: { channel: "telegram", chatId: "9" }, enabled: false });
  });

  it("a job with no chat keeps its replies in its session", () => {
    expect(mapNanobotJob(job({}), build, NOW).job).toMatchObject({ deliver: false, target: { channel: "cron", chatId: "none" } });
  });

  it.each([
    [{ schedule: { kind: "at", atMs: NOW - 1 } }, /is in the past/],
    [{ payload: { kind: "agent_turn", message: "hi", sessionKey: "websocket:chat-1" } }, /troupe has no websocket channel/],
    [{ payload: { kind: "agent_turn", message: "check status", deliver: true } }, /deliver is set but no channel\/to/],
    [{ id: "dream", payload: { kind: "system_event" } }, /troupe's own dream job/],
    [{ payload: { kind: "system_event", message: "x" } }, /a system_event job/],
    [{ schedule: { kind: "every", everyMs: 1500 } }, /whole number of seconds/],
    [{ schedule: { kind: "cron", expr: "0 9 * * *", tz: "Mars/Base" } }, /unknown timezone "Mars\/Base"/],
    [{ deleteAfterRun: true }, /deleteAfterRun on a every job/],
  ])("skips %j with a named reason", (over, reason) => {
    const m = mapNanobotJob(job(over), build, NOW);
    expect(m.job).toBeUndefined();
    expect(m.skip).toMatch(reason);
  });

  it("an at job in the future is kept", () => {
    expect(mapNanobotJob(job({ schedule: { kind: "at", atMs: NOW + 60_000 }, deleteAfterRun: true }), build, NOW).job).toMatchObject({ schedule: { kind: "at", atMs: NOW + 60_000 }, nextRunAt: NOW + 60_000 });
  });

  it("a store that does not read says why (tests/cron/test_cron_persistence.py's corrupt store)", () => {
    expect(parseNanobotCronStore("{not valid json")).toBe("not valid JSON");
    expect(parseNanobotCronStore('{"version":1}')).toBe("no jobs list in it");
  });
});

describe("importNanobot", () => {
  const tmp = useTempDirs();
  const quiet = { info: () => {}, warn: () => {} };

  it("imports once, in one batch with its marker, never over a troupe session or job, never changing nanobot's files", async () => {
    const user = await tmp();
    const dataDir = await tmp();
    const workspace = join(user, "ws");
    await mkdir(join(workspace, "sessions"), { recursive: true });
    await mkdir(join(user, ".nanobot", "cron"), { recursive: true });
    await writeFile(join(workspace, "sessions", "telegram_1.jsonl"), jsonl(meta("telegram:1", 2), ...msgs(3)));
    await writeFile(join(workspace, "sessions", "telegram_2.jsonl"), jsonl(meta("telegram:2", 0), ...msgs(1)));
    const jobs = JSON.stringify({ version: 1, jobs: [{ id: "new1", name: "n", schedule: { kind: "every", everyMs: 60_000 }, payload: { message: "m" } }, { id: "mine", name: "n", schedule: { kind: "every", everyMs: 60_000 }, payload: { message: "m" } }] });
    await writeFile(join(user, ".nanobot", "cron", "jobs.json"), jobs);
    const store = await openStore(join(dataDir, "store"));
    try {
      // troupe's own session telegram:2 and job "mine" are there already.
      await store.batch(appendMessagesOps(newSessionMeta("telegram:2", 1), [{ role: "user", content: "troupe's" }], null, 1).ops);
      const service = createCronService({ store, defaultTz: "UTC", now: () => NOW });
      await service.add({ id: "mine", message: "troupe's job", everySeconds: 3600, target: { channel: "api", chatId: "me" } });

      const deps = { store, workspace, dataDir, defaultTz: "UTC", logger: quiet, home: user, now: () => NOW };
      const record = await importNanobot(deps);
      expect(record).toMatchObject({ at: NOW, sessions: 1, cron: 1 });
      expect(record!.skipped).toEqual([
        `session ${join(workspace, "sessions", "telegram_2.jsonl")}: troupe has a session telegram:2 already (kept as it is)`,
        `cron job mine (n) in ${join(user, ".nanobot", "cron", "jobs.json")}: troupe has a cron job mine already (kept as it is)`,
      ]);
      const imported = (await getSessionMeta(store, "telegram:1"))!;
      expect((await sessionMessages(store, imported)).map((m) => m.message.content)).toEqual(["msg0", "msg1", "msg2"]);
      expect(await getConsolidationState(store, imported)).toMatchObject({ lastConsolidated: 2 });
      expect((await sessionMessages(store, (await getSessionMeta(store, "telegram:2"))!)).map((m) => m.message.content)).toEqual(["troupe's"]);
      expect((await getJob(store, "mine"))?.message).toBe("troupe's job");
      expect((await getJob(store, "new1"))?.createdBy).toBe("nanobot");
      expect(await store.get("meta", IMPORT_MARKER, importRecordSchema)).toEqual(record);
      expect(JSON.parse(await readFile(join(dataDir, "nanobot-import.json"), "utf8"))).toEqual(record);

      // A second start imports nothing, even of a file that came since.
      await writeFile(join(workspace, "sessions", "telegram_3.jsonl"), jsonl(meta("telegram:3", 0), ...msgs(1)));
      expect(await importNanobot(deps)).toBeUndefined();
      expect(await getSessionMeta(store, "telegram:3")).toBeUndefined();
      expect(await listJobs(store)).toHaveLength(2);
      expect(await readFile(join(user, ".nanobot", "cron", "jobs.json"), "utf8")).toBe(jobs);
    } finally {
      await store.close();
    }
  });

  it("with nothing of nanobot's writes no marker (it looks again at the next start)", async () => {
    const dataDir = await tmp();
    const store = await openStore(join(dataDir, "store"));
    try {
      expect(await importNanobot({ store, workspace: join(dataDir, "ws"), dataDir, defaultTz: "UTC", logger: quiet, home: await tmp() })).toBeUndefined();
      expect(await store.get("meta", IMPORT_MARKER, importRecordSchema)).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
