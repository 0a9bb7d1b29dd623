/**
 * The store's growth per turn and its size after 10,000 turns, before and after compaction (part
 * of `npm run bench`), so the free-space floor (storage.freeSpaceFloorMB / freeSpaceFloorPercent)
 * can be reasoned about. Turns are those of the durability bench (2 model calls, 1 tool call).
 * The daemon, the store's size and history.jsonl's appends run in this process from troupe's bundle,
 * compiled as the CLI is, not from its source under tsx (test/bench/harness.ts says why).
 */
import { rm } from "node:fs/promises";
import { z } from "zod";
import { writeHome } from "../helpers/home.js";
import { burst, daemonAt, daemonFor, fakeModel, loadTroupe } from "./harness.js";
import { record } from "./summary.js";

const { storeSize } = await loadTroupe();

const MB = 1024 * 1024;
const total = Number(process.env.TROUPE_BENCH_TURNS ?? 10_000);
const sessions = 500;
const model = await fakeModel(0);
// Compaction only when asked (upkeep below), with every finished turn past the threshold then.
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100 }, {});
await burst(daemon, ["warm-up"]);
const before = await storeSize(daemon.store.path);
const t0 = performance.now();
for (let done = 0; done < total; done += sessions) await burst(daemon, Array.from({ length: Math.min(sessions, total - done) }, (_, i) => `s${i}`));
const elapsed = performance.now() - t0;
await daemon.store.reclaim();
const after = await storeSize(daemon.store.path);
const blobCount = async (store: typeof daemon.store) => (await store.list("blobs", z.unknown())).length;
const chunksBefore = await blobCount(daemon.store);
await daemon.shutdown();

// The same store under a policy that compacts every finished turn: its upkeep at start folds them.
await writeHome(dir, model.url, { defaults: { maxConcurrentTurns: 100 }, config: { storage: { compactTurnsAfterDays: 0, keepTurnJournals: 0 } } });
const again = await daemonAt(dir);
const c0 = performance.now();
await again.upkeep();
const compactMs = performance.now() - c0;
const compacted = await storeSize(again.store.path);
const chunksAfter = await blobCount(again.store);
await again.shutdown();
await rm(dir, { recursive: true, force: true });
model.stop();

const perTurn = (after - before) / total;
console.log(`## store size: ${total.toLocaleString("en")} turns (2 model calls, 1 tool call, a short message) in ${sessions} sessions`);
console.log(`${(elapsed / 1000).toFixed(1)} s of turns; ${((after - before) / MB).toFixed(1)} MB on disk (${(perTurn / 1024).toFixed(1)} KB/turn)`);
console.log(`after compaction of every finished turn: ${(compacted / MB).toFixed(1)} MB (${((compacted - before) / total / 1024).toFixed(2)} KB/turn; compaction took ${(compactMs / 1000).toFixed(1)} s)`);
console.log(`stored prompt chunks (blobs.ts): ${chunksBefore} after the turns, ${chunksAfter} after the upkeep's sweep (no unfinished turn names them)`);
console.log(`the default floor (200 MB) leaves room for about ${Math.floor((200 * MB) / perTurn).toLocaleString("en")} uncompacted turns before the disk is full`);
record({ figure: `store size after ${total.toLocaleString("en")} turns`, target: "—", measured: `${(after / MB).toFixed(1)} MB (${(perTurn / 1024).toFixed(1)} KB/turn)` });
record({
  figure: "store size after compaction vs before",
  target: "— (small tool results: the journal is already near its summary's size)",
  measured: `${(compacted / after).toFixed(2)}× (${(compacted / MB).toFixed(1)} MB)`,
});

// Consolidation appends to memory/history.jsonl on a queue every session shares; with Dream not
// digesting, the file only grows. An append costs the same at 100 entries as at 4,000 (it once
// re-read and parsed the whole file twice: 4 ms at 100 entries, 36 ms at 4,000).
{
  const { mkdtemp } = await import("node:fs/promises");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { createMemoryFiles } = await loadTroupe();
  const ws = await mkdtemp(join(tmpdir(), "troupe-bench-history-"));
  const files = createMemoryFiles(ws);
  const summary = "The user asked about a word and the assistant looked it up with a tool. ".repeat(6);
  const archived = { epoch: 0, from: 0, to: 4, createdAt: 1 };
  const appendMs = async (n: number) => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await files.appendHistory({ content: summary, sessionKey: `bench:${i}`, archived });
    return (performance.now() - t0) / n;
  };
  await appendMs(100);
  const early = await appendMs(50);
  await appendMs(3_850);
  const late = await appendMs(50);
  await rm(ws, { recursive: true, force: true });
  console.log(`history.jsonl append (a consolidation's entry, synced): ${early.toFixed(2)} ms at 100 entries, ${late.toFixed(2)} ms at 4,000`);
  record({ figure: "history.jsonl append at 4,000 entries vs 100", target: "≤ 2× (flat)", measured: `${(late / early).toFixed(2)}× (${late.toFixed(2)} vs ${early.toFixed(2)} ms)`, pass: late / early <= 2 });
}
