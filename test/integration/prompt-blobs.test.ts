import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createConversation } from "../../actors/conversation.js";
import { defaultConfig } from "../../src/config/index.js";
import { BLOB_GRACE_MS, blobHash, promptChunks, splitPrompt, sweepBlobs } from "../../src/store/blobs.js";
import type { Store, StoreOp } from "../../src/store/store.js";
import { getTurn, listOpenTurns, referencedBlobs, turnInputSchema } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi } from "../fixtures/fake-openai.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { countingTools, turnDeps } from "../helpers/turn-env.js";

const storedInput = async (store: Store, turnId: string) => (await store.get("journal", `${turnId}:input`, z.object({ input: turnInputSchema })))!.input;
const blobKeys = async (store: Store) => (await store.list("blobs", z.unknown())).map((r) => r.key);
const msg = (content: string) => ({ sessionKey: "cli:a", channel: "cli", chatId: "a", content });
const systemOf = (body: { messages: Array<{ content?: unknown }> }) => String(body.messages[0]!.content);

/** A model whose first call of the given numbers waits until released (a turn held open in awaiting_model). */
function gatedModel(held: number[]) {
  const waiting = new Map<number, () => void>();
  const reached = new Map<number, Promise<void>>();
  const arrive = new Map<number, () => void>();
  for (const n of held) reached.set(n, new Promise<void>((r) => arrive.set(n, r)));
  return {
    reached: (n: number) => reached.get(n)!,
    release: () => [...waiting.values()].forEach((r) => r()),
    handler: async (_req: unknown, i: number) => {
      if (held.includes(i)) {
        arrive.get(i)!();
        await new Promise<void>((r) => waiting.set(i, r));
      }
      return { content: `answer ${i}` };
    },
  };
}

describe("system prompts stored by content", () => {
  const tempDir = useTempDirs();
  let fake: FakeOpenAi | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    await fake?.close();
  });

  async function workspaceWithHistory(entries: number) {
    const dir = await tempDir();
    await mkdir(join(dir, "memory"), { recursive: true });
    await writeFile(join(dir, "memory", "MEMORY.md"), "The user likes tea.\n");
    const lines = Array.from({ length: entries }, (_, i) => JSON.stringify({ cursor: i + 1, timestamp: `2026-01-01 10:0${i}`, content: `entry ${i}: ${"x".repeat(500)}`, session_key: "cli:a" }));
    await writeFile(join(dir, "memory", "history.jsonl"), `${lines.join("\n")}\n`);
    return dir;
  }

  it("splits a prompt into chunks that join back exactly, one per section and history entry", () => {
    const prompt = "# troupe\n\nintro\n\n---\n\n# Memory\n\nfacts\n\n---\n\n# Recent History\n\n- [2026-01-01 10:00] one\n- [2026-01-01 10:01] two\nmore of two";
    const chunks = splitPrompt(prompt);
    expect(chunks.join("")).toBe(prompt);
    expect(chunks).toHaveLength(5);
    // A new entry adds a chunk; the others keep their hash.
    const next = splitPrompt(`${prompt}\n- [2026-01-01 10:02] three`).map(blobHash);
    expect(next.slice(0, 4)).toEqual(chunks.slice(0, 4).map(blobHash));
    expect(next).toHaveLength(6);
    expect(splitPrompt("")).toEqual([""]);
  });

  it("remembers a prompt's chunks and hashes, so a repeated prompt is neither split nor hashed again; a bounded memory", () => {
    const prompt = `# troupe ${Math.random()}\n\n---\n\n# Memory\n\nfacts\n- [2026-01-01 10:00] one`;
    const first = promptChunks(prompt);
    expect(first.chunks).toEqual(splitPrompt(prompt));
    expect(first.refs).toEqual(splitPrompt(prompt).map(blobHash));
    // The same text again (another string with the same characters): the remembered answer.
    expect(promptChunks(prompt.slice(0, 10) + prompt.slice(10))).toBe(first);
    // Other prompts past the bound (4 M characters) push it out: worked out again, equal.
    for (let i = 0; i < 5; i++) promptChunks(`${i}${"y".repeat(1024 * 1024)}`);
    const again = promptChunks(prompt);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  });

  it("two turns with the same prompt store it once; the input names it and reads back whole", async () => {
    fake = await startFakeOpenAi([], async (_req, i) => ({ content: `answer ${i}` }));
    const dir = await workspaceWithHistory(5);
    const deps = await turnDeps(dir, fake.url, countingTools().registry);
    stores.push(deps.store);
    const written: StoreOp[][] = [];
    const batch = deps.store.batch.bind(deps.store);
    deps.store.batch = (ops, opts) => {
      written.push(ops);
      return batch(ops, opts);
    };
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    const blobBytes = () => written.flat().reduce((n, op) => n + (op.type === "put" && op.sublevel === "blobs" ? JSON.stringify(op.value).length : 0), 0);

    await conversation.handle(msg("first"));
    const afterFirst = blobBytes();
    const prompt = systemOf(fake.requests[0]!.body);
    expect(prompt).toContain("entry 4:");
    expect(afterFirst).toBeGreaterThan(prompt.length);
    expect(new Set(await blobKeys(deps.store))).toEqual(new Set(splitPrompt(prompt).map(blobHash)));

    written.length = 0;
    await conversation.handle(msg("second"));
    expect(systemOf(fake.requests[1]!.body)).toBe(prompt);
    // Nothing of the prompt written again: no blob put, and no batch carries its text.
    expect(blobBytes()).toBe(0);
    expect(written.flat().some((op) => op.type === "put" && JSON.stringify(op.value).includes("entry 4:"))).toBe(false);
  });

  it("a prompt's chunks written with a turn's first checkpoint are not read back by the turns after it; turns prepared at once read each stored chunk once", async () => {
    fake = await startFakeOpenAi([], async (_req, i) => ({ content: `answer ${i}` }));
    const dir = await workspaceWithHistory(4);
    const registry = countingTools().registry;
    const first = await turnDeps(dir, fake.url, registry);
    const blobReads = (store: Store) => store.readStats.gets.blobs ?? 0;
    const conversation = createConversation({ ...first, config: defaultConfig() });
    await conversation.handle(msg("first"));
    const afterFirst = blobReads(first.store);
    await conversation.handle(msg("second"));
    expect(blobReads(first.store)).toBe(afterFirst);
    // A session with no history entries of its own: its prompt is the part every session shares.
    await conversation.handle({ ...msg("first"), sessionKey: "cli:s0" });
    const chunks = splitPrompt(systemOf(fake.requests.at(-1)!.body)).length;
    await first.store.close();

    // Another process: the chunks are stored, not known. Ten sessions' turns prepared at once read each chunk once.
    const again = await turnDeps(dir, fake.url, registry);
    stores.push(again.store);
    const other = createConversation({ ...again, config: defaultConfig() });
    const prepared = await Promise.all(Array.from({ length: 10 }, (_, i) => other.prepare({ ...msg(`hello ${i}`), sessionKey: `cli:s${i}` })));
    expect(prepared.every((p) => p.initialOps.every((op) => op.sublevel !== "blobs"))).toBe(true);
    expect(blobReads(again.store)).toBe(chunks);
  });

  it("a turn interrupted in its model call resumes after a restart with its prompt read back from the blobs", async () => {
    const model = gatedModel([0]);
    fake = await startFakeOpenAi([], model.handler);
    const dir = await workspaceWithHistory(8);
    const registry = countingTools().registry;
    const first = await turnDeps(dir, fake.url, registry);
    const turn = await createConversation({ ...first, config: defaultConfig() }).begin(msg("question"));
    await model.reached(0);
    await turn.stop();
    await first.store.close();
    model.release();

    const again = await turnDeps(dir, fake.url, registry);
    stores.push(again.store);
    const [open] = await listOpenTurns(again.store, "cli:a");
    expect(open?.turnId).toBe(turn.turnId);
    const stored = await storedInput(again.store, turn.turnId);
    expect(stored.messages[0]).toEqual({ role: "system", content: "" });
    expect(stored.systemBlobs!.length).toBeGreaterThan(8);
    const record = await getTurn(again.store, turn.turnId);
    const prompt = systemOf(fake.requests[0]!.body);
    expect(record!.input!.messages[0]).toEqual({ role: "system", content: prompt });
    const result = await createConversation({ ...again, config: defaultConfig() }).resume(record!).done;
    expect(result.state).toBe("responded");
    expect(systemOf(fake.requests.at(-1)!.body)).toBe(prompt);
  });

  it("the sweep keeps the blobs an open turn names and drops those no turn names any more", async () => {
    const model = gatedModel([1]);
    fake = await startFakeOpenAi([], model.handler);
    const dir = await workspaceWithHistory(3);
    const deps = await turnDeps(dir, fake.url, countingTools().registry);
    stores.push(deps.store);
    await createConversation({ ...deps, config: defaultConfig() }).handle(msg("first"));
    const firstPrompt = systemOf(fake.requests[0]!.body);
    // The memory changes: the next turn's prompt shares every chunk but one.
    await writeFile(join(dir, "memory", "MEMORY.md"), "The user likes coffee now.\n");
    const open = await createConversation({ ...deps, config: defaultConfig() }).begin(msg("second"));
    await model.reached(1);
    // The call went out while its first checkpoint was written: that input is durable once the call's answer may be taken.
    const names = (await until(() => deps.store.get("journal", `${open.turnId}:input`, z.object({ input: turnInputSchema })), 10_000, "the turn's stored input"))!.input.systemBlobs!;
    const stale = splitPrompt(firstPrompt).map(blobHash).filter((h) => !names.includes(h));
    expect(stale).toHaveLength(1);
    expect(await blobKeys(deps.store)).toEqual(expect.arrayContaining(stale));
    expect(await referencedBlobs(deps.store)).toEqual(new Set(names));

    // Within the grace period nothing goes (a prepared input may still be on its way to disk).
    expect(await sweepBlobs(deps.store, () => referencedBlobs(deps.store))).toBe(0);
    expect(await sweepBlobs(deps.store, () => referencedBlobs(deps.store), Date.now() + BLOB_GRACE_MS + 1)).toBe(1);
    expect(new Set(await blobKeys(deps.store))).toEqual(new Set(names));
    expect((await getTurn(deps.store, open.turnId))!.input!.messages[0]!.content).toBe(systemOf(fake.requests[1]!.body));

    // Once the open turn is finished its input is pruned, and its blobs go with the next sweep.
    model.release();
    expect((await open.done).state).toBe("responded");
    expect(await sweepBlobs(deps.store, () => referencedBlobs(deps.store), Date.now() + BLOB_GRACE_MS + 1)).toBe(names.length);
    expect(await blobKeys(deps.store)).toEqual([]);
    // A later turn finds them gone and writes them again.
    await createConversation({ ...deps, config: defaultConfig() }).handle(msg("third"));
    expect(new Set(await blobKeys(deps.store))).toEqual(new Set(names));
  });

  it("a blob a sweep is deleting is written again by a turn prepared meanwhile", async () => {
    fake = await startFakeOpenAi([], async (_req, i) => ({ content: `answer ${i}` }));
    const dir = await workspaceWithHistory(2);
    const deps = await turnDeps(dir, fake.url, countingTools().registry);
    stores.push(deps.store);
    const conversation = createConversation({ ...deps, config: defaultConfig() });
    await conversation.handle(msg("first"));
    const names = splitPrompt(systemOf(fake.requests[0]!.body)).map(blobHash);
    // The sweep's delete is held in flight while the next turn is prepared and run.
    const batch = deps.store.batch.bind(deps.store);
    let releaseDelete!: () => void;
    const held = new Promise<void>((r) => (releaseDelete = r));
    deps.store.batch = async (ops, opts) => {
      if (ops.every((op) => op.sublevel === "blobs" && op.type === "del")) await held;
      return batch(ops, opts);
    };
    const sweeping = sweepBlobs(deps.store, async () => new Set(), Date.now() + BLOB_GRACE_MS + 1);
    await new Promise((r) => setTimeout(r, 0));
    const next = conversation.prepare({ ...msg("second") });
    const prepared = await next;
    releaseDelete();
    expect(await sweeping).toBe(names.length);
    expect(prepared.initialOps.filter((op) => op.sublevel === "blobs").map((op) => op.key).sort()).toEqual([...names].sort());
  });

  it("reads a turn input of the previous format, with its prompt inline", async () => {
    const dir = await tempDir();
    const deps = await turnDeps(dir, "http://127.0.0.1:9", countingTools().registry);
    stores.push(deps.store);
    const input = { turnId: "old", sessionKey: "cli:a", channel: "cli", chatId: "a", maxIterations: 5, messages: [{ role: "system", content: "an old prompt" }, { role: "user", content: "hi" }] };
    const snapshot = { status: "active", value: "awaiting_model", context: { turnId: "old", messages: [], iteration: 0, seq: 1, takenIds: [] } };
    await deps.store.batch(
      [
        { type: "put", sublevel: "turns", key: "old", value: { format: 3, turnId: "old", sessionKey: "cli:a", state: "awaiting_model", final: false, seq: 1, snapshot, createdAt: 1, updatedAt: 1, resumes: 0, messageCount: 2 } },
        { type: "put", sublevel: "journal", key: "old:input", value: { input } },
      ],
      { sync: true },
    );
    const record = await getTurn(deps.store, "old");
    expect(record?.format).toBe(3);
    expect(record?.input?.messages).toEqual(input.messages);
    expect(record?.snapshot.context.messages).toEqual(input.messages);
    expect(await referencedBlobs(deps.store)).toEqual(new Set());
  });
});
