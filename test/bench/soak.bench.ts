/**
 * `npm run bench:soak`: a real `troupe gateway` process (the bundled CLI, as users run it) under
 * steady traffic for TROUPE_SOAK_MINUTES (30): every ~2 s, 200 sessions (drawn from 1,000, so
 * sessions passivate and come back) each send a message with one tool call against a 50 ms model,
 * which answers with as many words as the session asks for (450 to 750, by session: see WINDOW).
 * Each minute, between two bursts (no turn running or waiting, only the last burst's sessions live), the bench has the gateway collect its
 * garbage through its inspector and reads the live heap and RSS (from /proc, before and after that
 * collection), beside V8's own lowest heap after a full GC that minute (GET /api/status: it counts
 * the burst in flight and what was allocated before its reading, so it swings with the traffic) and
 * what grows up to a bound (`held`: live sessions, their kept messages, the token counts cached).
 * Judged by the last third of the run against the middle third (the first third is warm-up: code,
 * caches, pools); it says what was still filling in the thirds compared.
 *
 * What its heap snapshots showed (issue 15, November 2026; 9-minute runs, snapshots at minutes 4 and 8,
 * `held`: histories kept = live sessions, so a passivated session's history is held by nobody). A
 * session here passivates between two of its messages (5 s idle, a message every ~15 s), so each turn
 * reads its whole history afresh: new message objects, each entered in the WeakMaps keyed by message
 * (request-body's `encoded`, the token counts `counted` and `bounded`, runs' `firstMet`). Their entries
 * went only at V8's next full GC, and V8 never shrinks a WeakMap's table after a GC empties it: the
 * four tables held every re-read message since the last full GC, 4 × 17 MB at minute 8 (the live
 * heap 59 → 126 MB; 9 minutes: 57 → 86 MB, 1.49×). Now (memory/side-data.ts) a session's entries
 * are deleted when its actor ends and an archived message's when it is archived: the tables are
 * sized by the live sessions' messages (4 × 2 MB at minute 8, 48,000 kept messages; the run 52 → 63
 * MB, 1.21×). And a message's request bytes were kept twice, a Buffer each (96 bytes on the heap, its
 * bytes in a pool slab) beside its run's joined bytes: they are let go once a run holds them.
 * Without snapshots, 9 minutes (same machine, loaded): before 61 → 69 MB (1.13×; kept messages
 * 23,200 → 28,800), after 51 → 58 MB (1.15×; 21,300 → 37,200): less heap for more kept messages, the
 * ratio now the kept histories' growth.
 * What still grows is legitimate and bounded: the live sessions' kept histories (the message, its
 * kept-messages entries, token counts, its run's bytes: ~0.45 KB of heap each), until each session
 * reaches its budget; the token counts cache, up to its 20,000 entries (~4 MB; full by minute ~5);
 * the inspector's event ring (a fixed number of events, whose snapshots hold their turn's messages).
 * V8's own "heap after the last full GC" counted the burst in flight, which is why the bench collects
 * at a quiet moment.
 * With the steady state reached (see WINDOW; 30 minutes, 24 November 2026, a shared 2-core machine):
 * kept messages rise to minute 3 (48 a session), sessions consolidate from minute 4 (7,718 chunks by
 * minute 30) and the kept histories swing at 36-56 messages a session from then on; the live heap
 * 62 → 61 MB (0.98×), RSS 335 → 354 MB (1.06×), 96,400 turns, all replied (that run read the heap
 * with 200-400 sessions live, before `quiet` waited for the last burst's 200 alone; a 9-minute run
 * since, 200 each minute: the live heap 51, 51, 52, 52 MB over minutes 5-8). Two things still grow
 * with traffic, slowly: history.jsonl's entries, kept parsed in memory (~320 bytes each, ~280 a
 * minute: Dream digests 20 a run and undigested entries are never dropped), and RSS's file pages, as
 * LevelDB maps its growing table files (the store ~110 → ~175 MB over minutes 15-30): RSS is printed
 * in its anonymous and file parts for that.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ProcessMemory } from "../../src/server/process-memory.js";
import { getJson, sendMessage } from "../helpers/gateway.js";
import { connectInspector, inspectorUrl } from "./inspector.js";
import { benchGateway, rssOf, rssPartsOf } from "./proc.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const minutes = Number(process.env.TROUPE_SOAK_MINUTES ?? 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

// The steady state a long-running daemon reaches: every session's unarchived history at or near its
// token budget, consolidated back to half of it whenever a turn would pass it, so the kept histories
// (and what is kept beside their messages) stop growing and swing around a mean. The soak must reach it
// within its first third. Before (November 2026): answers of one word, a turn added ~52 tokens, and at a
// window of 12,000 (an input budget of 8,928, ~3.8k of it the system prompt and tool schemas) a session
// reached its budget near turn ~100, minute ~50: a 30-minute run never consolidated and its kept
// histories grew throughout (its ~1.15× was that growth); a window small enough to reach the budget early
// archives down to half of it, below the prompt alone, and then consolidated nearly every turn.
// Now each turn asks for an answer of N words, so it adds ~N + 100 tokens, and the window is 20,000
// (a budget of 16,928: ~13k of history fit, ~4.5k stay after a consolidation). At ~4 turns a session a
// minute a session reaches its budget by turn ~13-20 (minute ~3-5) and then consolidates every ~10-15
// turns, one summary call each. N differs by session (7 lengths), so sessions reach their budget at
// different turns and their consolidations spread out rather than come in one wave: the messages kept
// in all (the per-minute printout) rise to minute ~3, then swing around a flat mean.
// TROUPE_SOAK_SNAPSHOTS=4,10: the gateway writes a V8 heap snapshot at those minutes (into a folder
// printed at the start; compare two with scripts/heap-diff.mjs). Writing one takes seconds and leaves
// RSS higher (the serialiser's memory): the RSS figures of such a run are not comparable.
const WINDOW = 20_000;
/** Each session's answers have their own length, so sessions reach their budget at their own pace (see above). */
const answerWords = (k: number) => 450 + (k % 7) * 50;
const snapshotAt = (process.env.TROUPE_SOAK_SNAPSHOTS ?? "").split(",").filter(Boolean).map(Number);
const snapshotDir = snapshotAt.length ? await mkdtemp(join(tmpdir(), "troupe-soak-heap-")) : undefined;
// The inspector (any free port) lets the bench ask for a full collection at a quiet moment (see `quiet`).
const nodeOptions = ["--inspect=127.0.0.1:0", ...(snapshotDir ? ["--heapsnapshot-signal=SIGUSR2", `--diagnostic-dir=${snapshotDir}`] : [])];
const { gateway, pid, stop } = await benchGateway(
  "soak",
  50,
  { maxConcurrentTurns: 100, sessionIdleSeconds: 5, contextWindowTokens: WINDOW, maxTokens: 2_048 },
  { NODE_OPTIONS: nodeOptions.join(" ") },
);
const wsUrl = inspectorUrl(gateway.output());
if (!wsUrl) throw new Error(`the gateway printed no inspector URL:\n${gateway.output()}`);
const inspector = await connectInspector(wsUrl);
if (snapshotDir) console.log(`heap snapshots at minutes ${snapshotAt.join(", ")} (each between two bursts, after a full GC) into ${snapshotDir}`);
console.log(`## soak: ${minutes} min of steady traffic to a real gateway (200 sessions of 1,000 every ~2 s, one tool call each, 50 ms model, answers of 450-750 words, window ${WINDOW.toLocaleString("en")})`);
console.log(
  "Each minute, between two bursts (no turn running, only the last burst's 200 sessions live), the bench has the gateway collect its garbage (a full GC through its inspector) and reads\n" +
    "the live heap and RSS then: what the gateway keeps, without the in-flight burst and garbage a heap read at a random instant counts.\n" +
    "Beside it: live session actors, the unarchived messages their kept histories hold (each grows until its session reaches its token\n" +
    "budget, by turn ~13-20, minute ~3-5, then consolidates back to half of it every ~10-15 turns: flat on average from then on), the\n" +
    "chunks archived so far, and the token counts cached (bounded).",
);

interface Held {
  liveSessions: number;
  keptSessions: number;
  keptMessages: number;
  archivedChunks: number;
  tokenCounts: { cached: number; limit: number; tokenizerLoaded: boolean };
}
const rss: number[] = [];
const rssBeforeGc: number[] = [];
// RSS's two parts after the bench's GC: anonymous (heap, malloc) and file pages (binary, the store's mmapped tables).
const rssAnon: number[] = [];
const rssFile: number[] = [];
const live: number[] = [];
const kept: number[] = [];
let cacheFullAt: number | undefined;
const afterGc: number[] = [];
let turns = 0;
let missed = 0;
const start = Date.now();
const end = start + minutes * 60_000;
// V8's own full collections, as before: each minute's lowest heap just after one (the gateway asked
// every 5 s). It counts what was in flight when the collection ran, so it swings with the bursts.
let floor = Number.POSITIVE_INFINITY;
let lastGcAt: number | undefined;
const sample = setInterval(() => {
  void getJson<{ memory: ProcessMemory }>(gateway, "/api/status").then(({ memory: m }) => {
    if (m.heapUsedAfterGc === undefined || m.lastFullGcAt === lastGcAt) return;
    lastGcAt = m.lastFullGcAt;
    floor = Math.min(floor, m.heapUsedAfterGc);
  }, () => undefined);
}, 5_000);

/**
 * Waits (a generous deadline) until no turn runs or waits in the gateway, and only the last burst's
 * 200 sessions are live (an earlier burst's passivate 5 s after their turn): the moment between two
 * bursts, the same each minute. Without the second condition the count caught was 200, 300 or 400 by
 * how long the bursts took (the machine is shared), and the live heap swung ~8 MB with it.
 */
async function quiet(): Promise<boolean> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { turns: t } = await getJson<{ turns: { running: number; waiting: number } }>(gateway, "/api/actors");
    const { held } = await getJson<{ held: Held }>(gateway, "/api/status");
    if (t.running === 0 && t.waiting === 0 && held.liveSessions <= 200) return true;
    await sleep(50);
  }
  return false;
}

async function measure(n: number): Promise<void> {
  const calm = await quiet();
  // Read before the bench's own collection (which may run several full GCs): V8's own this minute.
  const { held, memory } = await getJson<{ held: Held; memory: ProcessMemory }>(gateway, "/api/status");
  const fullGcs = memory.fullGcs - gcsBefore;
  // RSS as the burst left it too: the collection below gives pages back, so the RSS read after it is lower.
  const rssBefore = await rssOf(pid);
  await inspector.call("HeapProfiler.collectGarbage");
  const { usedSize } = await inspector.call<{ usedSize: number }>("Runtime.getHeapUsage");
  const bytes = await rssOf(pid);
  const parts = await rssPartsOf(pid);
  gcsBefore = (await getJson<{ memory: ProcessMemory }>(gateway, "/api/status")).memory.fullGcs;
  rss.push(bytes);
  rssBeforeGc.push(rssBefore);
  rssAnon.push(parts.anon);
  rssFile.push(parts.file);
  live.push(usedSize);
  kept.push(held.keptMessages);
  if (cacheFullAt === undefined && held.tokenCounts.cached >= held.tokenCounts.limit) cacheFullAt = n;
  const low = floor;
  floor = Number.POSITIVE_INFINITY;
  if (Number.isFinite(low)) afterGc.push(low);
  const perSession = held.liveSessions ? (held.keptMessages / held.liveSessions).toFixed(0) : "0";
  console.log(
    `minute ${String(n).padStart(2)}: live heap ${(usedSize / MB).toFixed(0)} MB, RSS ${(bytes / MB).toFixed(0)} MB (anonymous ${(parts.anon / MB).toFixed(0)}, files ${(parts.file / MB).toFixed(0)}; ${(rssBefore / MB).toFixed(0)} MB before that GC)${calm ? "" : " (not quiet: turns running or more than the last burst's sessions live)"}; ` +
      `V8's lowest after a full GC this minute ${Number.isFinite(low) ? `${(low / MB).toFixed(0)} MB` : "(none)"} (${fullGcs} full GCs); ` +
      `${held.liveSessions} live sessions (histories kept: ${held.keptSessions}) keeping ${held.keptMessages.toLocaleString("en")} messages (${perSession} each), ` +
      `${held.archivedChunks.toLocaleString("en")} chunks archived so far, ` +
      `${held.tokenCounts.cached.toLocaleString("en")} of ${held.tokenCounts.limit.toLocaleString("en")} token counts cached; ${turns.toLocaleString("en")} turns`,
  );
  if (snapshotAt.includes(n)) process.kill(pid, "SIGUSR2");
}

let measured = 0;
let gcsBefore = 0;
while (Date.now() < end) {
  const replies = await Promise.all(
    Array.from({ length: 200 }, (_, i) => {
      const k = (turns + i) % 1_000;
      return sendMessage(gateway, `api:soak${k}`, `list the workspace, then give me an answer of ${answerWords(k)} words`).replied;
    }),
  );
  missed += replies.filter((r) => !r).length;
  turns += 200;
  if (Date.now() - start >= (measured + 1) * 60_000) await measure(++measured);
  await sleep(2_000);
}
clearInterval(sample);
inspector.close();
await stop();

const third = Math.floor(rss.length / 3);
if (third < 1) {
  console.log("(too short to judge growth: run at least 3 minutes)");
  process.exit(0);
}
const ratioOf = (xs: number[]) => {
  const t = Math.floor(xs.length / 3);
  const middle = mean(xs.slice(t, 2 * t));
  const last = mean(xs.slice(2 * t));
  return { middle, last, ratio: last / middle, text: `${(middle / MB).toFixed(0)} MB → ${(last / MB).toFixed(0)} MB (${(last / middle).toFixed(2)}×)` };
};
const r = ratioOf(rss);
const h = ratioOf(live);
console.log(`live heap between bursts, mean of the middle third → the last third: ${h.text}`);
if (afterGc.length >= 3) console.log(`V8's lowest after a full GC, the same: ${ratioOf(afterGc).text}`);
console.log(`RSS between bursts, after the bench's GC, the same: ${r.text}; before it: ${ratioOf(rssBeforeGc).text}; ${turns.toLocaleString("en")} turns, ${missed} without a reply`);
// Not judged apart (RSS is): which part moved. File pages grow with the store (LevelDB maps its tables).
console.log(`RSS's parts after the bench's GC, the same: anonymous ${ratioOf(rssAnon).text}, file pages ${ratioOf(rssFile).text}`);
// What grows only up to its bound, in the thirds compared: a change there is the traffic's, not a leak.
const k = ratioOf(kept);
console.log(
  `bounded: messages kept by live sessions, the same: ${k.middle.toFixed(0)} → ${k.last.toFixed(0)} (${k.ratio.toFixed(2)}×; each session's swing between half its token budget and all of it, from minute ~3-5); ` +
    `token counts cache ${cacheFullAt === undefined ? "not yet full" : `full from minute ${cacheFullAt}`}`,
);
record({
  figure: `soak, ${minutes} min: gateway RSS and live heap, last third vs middle third`,
  target: "no growth (≤ 1.1×)",
  measured: `RSS ${r.ratio.toFixed(2)}× (${(r.middle / MB).toFixed(0)} → ${(r.last / MB).toFixed(0)} MB), live heap ${h.ratio.toFixed(2)}× (${(h.middle / MB).toFixed(0)} → ${(h.last / MB).toFixed(0)} MB), ${turns.toLocaleString("en")} turns`,
  pass: r.ratio <= 1.1 && h.ratio <= 1.1 && missed === 0,
});
