/**
 * `npm run bench`: the daemon under load, in process, against a fake model in another process.
 *
 * 1. 1,000 sessions send one message each; each turn makes one tool call, so two model calls of
 *    50 ms; maxConcurrentTurns 100. Total time against the ideal (1,000 / 100 × 2 × 50 ms), peak RSS,
 *    and RSS once every session has passivated.
 * 2. The runtime's own cost per turn against a zero-latency model: one session's turns one after
 *    another (latency), and 1,000 sessions at once (throughput).
 */
import { rm } from "node:fs/promises";
import { filter, firstValueFrom } from "rxjs";
import type { Daemon } from "../../src/runtime.js";
import { burst, daemonFor, fakeModel } from "./harness.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gc = () => (globalThis as { gc?: () => void }).gc?.();

const sessionsAlive = (d: Daemon) => (d.tree.tree()?.children ?? []).filter((c) => c.kind === "session").length;

async function loadScenario() {
  const model = await fakeModel(50);
  const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100, sessionIdleSeconds: 2 });
  gc();
  const rssStart = process.memoryUsage().rss;
  let peak = rssStart;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const chats = Array.from({ length: 1_000 }, (_, i) => `s${i}`);
  const total = await burst(daemon, chats);
  const liveAfter = sessionsAlive(daemon);
  const t0 = performance.now();
  while (sessionsAlive(daemon) > 0) await sleep(100);
  const passivatedIn = performance.now() - t0;
  gc();
  await sleep(200);
  gc();
  clearInterval(sampler);
  const rssPassivated = process.memoryUsage().rss;
  const ideal = (1_000 / 100) * 2 * 50;
  const stats = daemon.store.commitStats;
  console.log("## 1,000 sessions, one tool call each, model latency 50 ms, maxConcurrentTurns 100");
  console.log(`total            ${total.toFixed(0)} ms`);
  console.log(`ideal            ${ideal} ms (1,000 / 100 × 2 model calls × 50 ms)`);
  console.log(`total / ideal    ${(total / ideal).toFixed(2)}×`);
  record({ figure: "1,000 sessions × 1 tool call, 50 ms model, vs ideal", target: "≤ 1.5×", measured: `${(total / ideal).toFixed(2)}×`, pass: total / ideal <= 1.5 });
  record({ figure: "RSS after every session passivated vs start", target: "≤ 1.2×", measured: `${(rssPassivated / rssStart).toFixed(2)}× (${(rssStart / MB).toFixed(0)} → ${(rssPassivated / MB).toFixed(0)} MB)`, pass: rssPassivated / rssStart <= 1.2 });
  console.log(`RSS at start     ${(rssStart / MB).toFixed(0)} MB`);
  console.log(`peak RSS         ${(peak / MB).toFixed(0)} MB (${liveAfter} sessions live when the last reply went out)`);
  console.log(`RSS passivated   ${(rssPassivated / MB).toFixed(0)} MB (all sessions passivated ${(passivatedIn / 1000).toFixed(1)} s later)`);
  console.log(`synced batches   ${stats.requests} requests in ${stats.writes} fsync'd writes (largest group ${stats.largestGroup})`);
  await daemon.shutdown();
  model.stop();
  await rm(dir, { recursive: true, force: true });
}

async function overheadScenario() {
  const model = await fakeModel(0);
  const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100 });
  // One session, turns back to back: the latency troupe adds to a turn of 2 model calls and 1 tool.
  await burst(daemon, ["warm-up"]);
  const serialTurns = 100;
  const t0 = performance.now();
  for (let i = 0; i < serialTurns; i++) {
    const id = await daemon.accept("api", { chatId: "serial", senderId: "bench", content: `turn ${i}` });
    await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.includes(id))));
  }
  const serial = (performance.now() - t0) / serialTurns;
  const cpu0 = process.cpuUsage();
  const parallel = await burst(daemon, Array.from({ length: 1_000 }, (_, i) => `p${i}`));
  const cpu = process.cpuUsage(cpu0);
  const cpuPerTurn = (cpu.user + cpu.system) / 1000 / 1_000;
  console.log("\n## runtime cost per turn, zero-latency model (2 model calls + 1 tool call per turn, 9 checkpoints)");
  console.log(`one session, serial   ${serial.toFixed(1)} ms per turn (${serialTurns} turns)`);
  console.log(`1,000 sessions        ${parallel.toFixed(0)} ms total, ${(parallel / 1_000).toFixed(2)} ms per turn, ${(1_000_000 / parallel).toFixed(0)} turns/s`);
  console.log(`CPU, 1,000 sessions   ${cpuPerTurn.toFixed(2)} ms of this process's CPU per turn (wall time above includes waiting on a loaded machine)`);
  record({ figure: "CPU per turn, 1,000 sessions, zero-latency model", target: "≤ 1.5 ms", measured: `${cpuPerTurn.toFixed(2)} ms`, pass: cpuPerTurn <= 1.5 });
  await daemon.shutdown();
  model.stop();
  await rm(dir, { recursive: true, force: true });
}

if (!(globalThis as { gc?: unknown }).gc) console.log("(run with --expose-gc for settled RSS figures)\n");
if (process.env.TROUPE_BENCH_ONLY !== "overhead") await loadScenario();
await overheadScenario();
