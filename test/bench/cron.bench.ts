/**
 * The cron scheduler with 10,000 jobs (part of `npm run bench`): 9,600 daily cron jobs (not due in
 * the window) and 400 interval jobs of 2 to 6 s that keep firing. For 12 s the real scheduler actor
 * runs on a real store; each run's lateness is when it was recorded and started against its
 * scheduled instant. Printed: RSS of the process, firings, lateness p50/p99/max.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActor } from "xstate";
import { createCronScheduler } from "../../actors/cron.js";
import { putJobOps } from "../../src/cron/jobs.js";
import { createCronService } from "../../src/cron/service.js";
import { openStore } from "../../src/store/store.js";

const JOBS = 10_000;
const FAST = 400;
const WINDOW_MS = 12_000;

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

const dir = await mkdtemp(join(tmpdir(), "troupe-cron-bench-"));
const store = await openStore(dir);
const service = createCronService({ store, defaultTz: "UTC" });
const rssBefore = process.memoryUsage().rss;
const target = { channel: "api", chatId: "bench" };
const t0 = performance.now();
// The daily jobs first; the fast ones last, anchored now, so their first instants come after the scheduler starts.
for (let i = FAST; i < JOBS; i += 500) {
  const jobs = Array.from({ length: Math.min(500, JOBS - i) }, (_, k) =>
    service.buildJob({ name: `daily ${i + k}`, message: "report", cronExpr: `${(i + k) % 60} ${(i + k) % 24} * * *`, tz: "Europe/Berlin", target }, Date.now()),
  );
  await store.batch(jobs.flatMap(putJobOps), { sync: true });
}
const fast = Array.from({ length: FAST }, (_, n) => service.buildJob({ name: `fast ${n}`, message: "tick", everySeconds: 2 + (n % 5), target }, Date.now() + (n % 1000)));
await store.batch(fast.flatMap(putJobOps), { sync: true });
const addMs = performance.now() - t0;

const lateness: number[] = [];
const logic = createCronScheduler({ store, start: (s) => lateness.push(Date.now() - s.run.scheduledAt) });
const actor = createActor(logic, { input: { startedAt: Date.now() } });
actor.start();
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 200);
await new Promise((r) => setTimeout(r, WINDOW_MS));
clearInterval(sampler);
actor.stop();
const firings = actor.getSnapshot().context.firings;
await store.close();
await rm(dir, { recursive: true, force: true });

const sorted = [...lateness].sort((a, b) => a - b);
console.log(`\n## cron scheduler: ${JOBS} jobs (${FAST} firing every 2-6 s), ${WINDOW_MS / 1000} s`);
console.log(`jobs written       ${addMs.toFixed(0)} ms`);
console.log(`RSS                ${mb(rssBefore)} before the jobs, ${mb(peakRss)} peak while scheduling`);
console.log(`runs started       ${lateness.length} in ${firings} firings`);
console.log(`lateness           p50 ${pct(sorted, 50)} ms, p99 ${pct(sorted, 99)} ms, max ${sorted.at(-1) ?? NaN} ms (started against scheduled instant)`);
