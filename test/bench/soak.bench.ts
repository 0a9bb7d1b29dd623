/**
 * `npm run bench:soak`: a real `troupe gateway` process (the bundled CLI, as users run it) under
 * steady traffic for TROUPE_SOAK_MINUTES (30): every ~2 s, 200 sessions (drawn from 1,000, so
 * sessions passivate and come back) each send a message with one tool call against a 50 ms model,
 * with a small context window (see below: sessions still grow, under budget, at 30 minutes).
 * The gateway's RSS (from /proc) is printed every minute beside V8's heap (used, total, and used just
 * after the last full collection: what is live, from GET /api/status); growth would show a leak. Judged by the
 * last third of the run against the middle third (the first third is warm-up: code, caches, pools).
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ProcessMemory } from "../../src/server/process-memory.js";
import { getJson, sendMessage } from "../helpers/gateway.js";
import { benchGateway, rssOf } from "./proc.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const minutes = Number(process.env.TROUPE_SOAK_MINUTES ?? 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

// A small context window, meant to bring sessions to their consolidation threshold early. Measured
// (/status of a soak session at minute 15: 30 turns, 5k of the 8,928-token input budget; the system
// prompt alone is ~3.8k): a turn here adds ~52 tokens, so a session reaches its budget near turn 100,
// about minute 50 at this rate. A 30-minute soak therefore sees sessions' unarchived histories grow
// (as they should: they are under budget) and never consolidate. A window of 7,500 consolidates from
// minute ~5, but then nearly every turn consolidates (the prompt is most of the budget) and the
// rate fell from ~2,400 to ~500 turns a minute; a window between the two would be the soak's steady state.
// TROUPE_SOAK_SNAPSHOTS=4,10: the gateway writes a V8 heap snapshot at those minutes (into a folder
// printed at the start; compare two with scripts/heap-diff.mjs). Writing one takes seconds and leaves
// RSS higher (the serialiser's memory): the RSS figures of such a run are not comparable.
const snapshotAt = (process.env.TROUPE_SOAK_SNAPSHOTS ?? "").split(",").filter(Boolean).map(Number);
const snapshotDir = snapshotAt.length ? await mkdtemp(join(tmpdir(), "troupe-soak-heap-")) : undefined;
const { gateway, pid, stop } = await benchGateway(
  "soak",
  50,
  { maxConcurrentTurns: 100, sessionIdleSeconds: 5, contextWindowTokens: 12_000, maxTokens: 2_048 },
  snapshotDir ? { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}` } : {},
);
if (snapshotDir) console.log(`heap snapshots at minutes ${snapshotAt.join(", ")} into ${snapshotDir}`);
console.log(`## soak: ${minutes} min of steady traffic to a real gateway (200 sessions of 1,000 every ~2 s, one tool call each, 50 ms model)`);

const rss: number[] = [];
const afterGc: number[] = [];
let turns = 0;
let missed = 0;
const start = Date.now();
const end = start + minutes * 60_000;
// The heap after a full GC depends on how much work is under way at that instant (a burst's turns are
// live too): each minute's lowest (the gateway is asked every 5 s, each full GC counted once) is
// the floor of what is kept, the figure a leak raises.
let floor = Number.POSITIVE_INFINITY;
let lastGcAt: number | undefined;
const sample = setInterval(() => {
  void getJson<{ memory: ProcessMemory }>(gateway, "/api/status").then(({ memory: m }) => {
    if (m.heapUsedAfterGc === undefined || m.lastFullGcAt === lastGcAt) return;
    lastGcAt = m.lastFullGcAt;
    floor = Math.min(floor, m.heapUsedAfterGc);
  }, () => undefined);
}, 5_000);
const minute = setInterval(() => {
  void Promise.all([rssOf(pid), getJson<{ memory: ProcessMemory }>(gateway, "/api/status").catch(() => undefined)]).then(([bytes, status]) => {
    rss.push(bytes);
    const m = status?.memory;
    const low = floor;
    floor = Number.POSITIVE_INFINITY;
    if (Number.isFinite(low)) afterGc.push(low);
    const heap = m ? `; heap ${(m.heapUsed / MB).toFixed(0)} of ${(m.heapTotal / MB).toFixed(0)} MB, after a full GC ${Number.isFinite(low) ? `${(low / MB).toFixed(0)} MB at the lowest this minute` : "(none this minute)"}` : "";
    if (snapshotAt.includes(rss.length)) process.kill(pid, "SIGUSR2");
    console.log(`minute ${String(rss.length).padStart(2)}: RSS ${(bytes / MB).toFixed(0)} MB${heap}, ${turns.toLocaleString("en")} turns`);
  });
}, 60_000);
while (Date.now() < end) {
  const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => sendMessage(gateway, `api:soak${(turns + i) % 1_000}`, "list the workspace").replied));
  missed += replies.filter((r) => !r).length;
  turns += 200;
  await sleep(2_000);
}
clearInterval(minute);
clearInterval(sample);
await stop();

const third = Math.floor(rss.length / 3);
if (third < 1) {
  console.log("(too short to judge growth: run at least 3 minutes)");
  process.exit(0);
}
const middle = mean(rss.slice(third, 2 * third));
const last = mean(rss.slice(2 * third));
const ratio = last / middle;
const gcThird = Math.floor(afterGc.length / 3);
const gcRatio = gcThird >= 1 ? mean(afterGc.slice(2 * gcThird)) / mean(afterGc.slice(gcThird, 2 * gcThird)) : undefined;
if (gcRatio !== undefined) console.log(`mean of each minute's lowest heap after a full GC, middle third ${(mean(afterGc.slice(gcThird, 2 * gcThird)) / MB).toFixed(0)} MB → last third ${(mean(afterGc.slice(2 * gcThird)) / MB).toFixed(0)} MB (${gcRatio.toFixed(2)}×)`);
console.log(`mean RSS, middle third ${(middle / MB).toFixed(0)} MB → last third ${(last / MB).toFixed(0)} MB (${ratio.toFixed(2)}×); ${turns.toLocaleString("en")} turns, ${missed} without a reply`);
record({
  figure: `soak, ${minutes} min: gateway RSS, last third vs middle third`,
  target: "no growth (≤ 1.1×)",
  measured: `${ratio.toFixed(2)}× (${(middle / MB).toFixed(0)} → ${(last / MB).toFixed(0)} MB, ${turns.toLocaleString("en")} turns${gcRatio === undefined ? "" : `; heap after full GC ${gcRatio.toFixed(2)}×`})`,
  pass: ratio <= 1.1 && missed === 0,
});
