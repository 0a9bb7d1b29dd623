/**
 * `npm run bench`: the daemon under load, in process, against a fake model in another process.
 *
 * 1. 100, 1,000 and 10,000 sessions send one message each; each turn makes one tool call, so two
 *    model calls of 50 ms; maxConcurrentTurns 100. Total time against the ideal (N / 100 × 2 × 50 ms),
 *    peak RSS, RSS once every session has passivated (at 1,000), and shutdown time with every
 *    session still live (at 100 and 10,000). The N users send as independent clients do: 100 at a
 *    time, each sending its next message once `daemon.accept` acknowledged the last (its synced
 *    inbox write), not one after another (a single client: on a loaded machine the accept loop then
 *    took 1.4 s of 1.6 at 100 sessions and 10.1 s of 10.3 at 1,000, each accept waiting a whole
 *    fsync wave, and every turn's writes went in ~6 times as many fsyncs). A Telegram bot's updates
 *    do come one at a time: the 1,000 point is also run with one sender and printed beside. Each
 *    point is a fresh in-process daemon (bundled: harness.ts) after one warm-up turn: every session is new and
 *    V8 is still optimizing, as for a burst soon after a daemon starts. The time the main thread
 *    spent runnable but waiting for a CPU is printed too: on a loaded machine it, not troupe, can
 *    make most of the total. So are where the total goes: each turn's time from its first
 *    checkpoint to its final state (a slot holds it that long, plus its preparation and its final
 *    batch's write: ideally 100 ms, the two model calls) and the event loop's delay (how late every callback runs) during the burst.
 *    The 1,000 point is run on three fresh daemons, each in a process of its own after the 100 point,
 *    and judged on their median (one run of the same code varies by ±10% on a shared machine), and on
 *    a daemon that has served a first burst of 1,000
 *    (V8 warmed), printed beside the judged one.
 * 2. The runtime's own cost per turn against a zero-latency model: one session's turns one after
 *    another (latency), and 1,000 sessions at once (throughput), twice: while V8 still optimizes the
 *    hot paths, and once it has (the target).
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { rm } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { filter, firstValueFrom } from "rxjs";
import type { Daemon } from "../../src/daemon-types.js";
import { turnFloor } from "./floor.js";
import { burst, daemonFor, fakeModel } from "./harness.js";
import { cpuMsOf } from "./proc.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gc = () => (globalThis as { gc?: () => void }).gc?.();

/**
 * RSS once the pages the last GC freed are given back. V8 unmaps them on a background thread after
 * the collection (its unmapper), in a real daemon after each of its own GCs as here after the
 * bench's gc(); read in the instant after gc() the figure still counts them (measured: 237 MB at
 * once, 179 MB a few ms later by /proc/self/status, at the same point of this bench). Polled until two
 * reads 100 ms apart agree within 1 MB (at most 3 s).
 */
async function settledRss(): Promise<number> {
  let last = process.memoryUsage().rss;
  for (const end = Date.now() + 3_000; Date.now() < end; ) {
    await sleep(100);
    const now = process.memoryUsage().rss;
    if (Math.abs(now - last) < MB) return now;
    last = now;
  }
  return last;
}

/** The event-loop delay monitor's sampling period (ms). */
const LOOP_SAMPLE_MS = 5;

const sessionsAlive = (d: Daemon) => (d.tree.tree()?.children ?? []).filter((c) => c.kind === "session").length;

/** N sessions send one message each (one tool call, 50 ms model, 100 turns at once): total time against the ideal, RSS. */
async function loadScenario(n: number, opts: { passivate: boolean; senders?: number }) {
  const senders = opts.senders ?? 100;
  const model = await fakeModel(50);
  const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100, sessionIdleSeconds: opts.passivate ? 2 : 600 });
  // One turn first, untimed: the first model call loads the openai SDK and the tokenizer.
  await burst(daemon, ["warm-up"]);
  gc();
  const rssStart = process.memoryUsage().rss;
  let peak = rssStart;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const chats = Array.from({ length: n }, (_, i) => `s${i}`);
  const threadsBefore = threadCpu();
  const waitBefore = mainRunqueueWait();
  const modelBefore = cpuMsOf(model.pid);
  const turns = turnTimes(daemon);
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS });
  loopDelay.enable();
  const total = await burst(daemon, chats, { inFlight: senders });
  loopDelay.disable();
  const held = turns.stop();
  const threadsAfter = threadCpu();
  const waitAfter = mainRunqueueWait();
  const modelMs = cpuMsOf(model.pid) - modelBefore;
  const liveAfter = sessionsAlive(daemon) - 1;
  const ideal = (n / 100) * 2 * 50;
  const stats = daemon.store.commitStats;
  console.log(`\n## ${n.toLocaleString("en")} sessions, one tool call each, model latency 50 ms, maxConcurrentTurns 100, ${senders === 1 ? "one sender, a message at a time" : `${senders} senders at once`}`);
  console.log(`total            ${total.toFixed(0)} ms (ideal ${ideal} ms: ${n.toLocaleString("en")} / 100 × 2 model calls × 50 ms) → ${(total / ideal).toFixed(2)}×`);
  if (threadsBefore && threadsAfter) {
    const main = threadsAfter.main - threadsBefore.main;
    const other = threadsAfter.other - threadsBefore.other;
    console.log(`CPU              main thread ${main.toFixed(0)} ms (busy ${((100 * main) / total).toFixed(0)}% of the time), other threads ${other.toFixed(0)} ms; ${(main / n).toFixed(2)} ms of the main thread per turn; the fake model's process ${modelMs.toFixed(0)} ms (on the same ${availableParallelism()} CPUs)`);
  }
  if (waitBefore !== undefined && waitAfter !== undefined) {
    const wait = waitAfter - waitBefore;
    console.log(`CPU contention   main thread runnable but waiting for a CPU ${wait.toFixed(0)} ms (${((100 * wait) / total).toFixed(0)}% of the time; other processes on the machine)`);
  }
  console.log(`turn time        ${held.mean.toFixed(0)} ms mean, ${held.p90.toFixed(0)} ms p90, from a turn's first checkpoint to its final state (${held.turns} turns; two model calls are 100 ms: the rest is the turn's waits on synced checkpoints, the tool, and the main thread)`);
  // Node records each whole interval between its samples, the sampling period included: late = interval - period.
  const late = (ns: number) => Math.max(0, ns / 1e6 - LOOP_SAMPLE_MS);
  console.log(`event loop delay ${late(loopDelay.mean).toFixed(1)} ms mean, ${late(loopDelay.percentile(99)).toFixed(0)} ms p99, ${late(loopDelay.max).toFixed(0)} ms max (how late a ${LOOP_SAMPLE_MS} ms timer ran: every turn's callbacks wait that long behind other work and GC)`);
  console.log(`peak RSS         ${(peak / MB).toFixed(0)} MB (start ${(rssStart / MB).toFixed(0)} MB; ${liveAfter} sessions live when the last reply went out)`);
  console.log(`synced batches   ${stats.requests} requests in ${stats.writes} fsync'd writes (largest group ${stats.largestGroup})`);
  let rssPassivated: number | undefined;
  if (opts.passivate) {
    const t0 = performance.now();
    while (sessionsAlive(daemon) > 0) await sleep(100);
    const passivatedIn = performance.now() - t0;
    gc();
    await sleep(200);
    gc();
    const atGc = process.memoryUsage().rss;
    rssPassivated = await settledRss();
    console.log(`RSS passivated   ${(rssPassivated / MB).toFixed(0)} MB (all sessions passivated ${(passivatedIn / 1000).toFixed(1)} s later; ${(atGc / MB).toFixed(0)} MB in the instant after the bench's gc())`);
  }
  clearInterval(sampler);
  // Shutdown with every session still live (when they were kept): stopping N actors, each at its last checkpoint.
  const live = Math.max(0, sessionsAlive(daemon) - (opts.passivate ? 0 : 1));
  const s0 = performance.now();
  await daemon.shutdown();
  const shutdownMs = performance.now() - s0;
  console.log(`shutdown         ${shutdownMs.toFixed(0)} ms with ${live.toLocaleString("en")} sessions live`);
  model.stop();
  await rm(dir, { recursive: true, force: true });
  return { n, ratio: total / ideal, rssStart, peak, rssPassivated, shutdownMs, live };
}

async function scaleCurve() {
  const points = [100, 1_000, 10_000].filter((n) => n <= Number(process.env.TROUPE_BENCH_MAX_SESSIONS ?? 10_000));
  const results: Array<Awaited<ReturnType<typeof loadScenario>>> = [];
  for (const n of points) results.push(await loadScenario(n, { passivate: n === 1_000 }));
  console.log("\n## scale curve (one tool call per session, 50 ms model, 100 turns at once)");
  console.log("sessions   total/ideal   peak RSS   shutdown");
  for (const r of results) console.log(`${String(r.n).padStart(8)}   ${r.ratio.toFixed(2).padStart(10)}×   ${(r.peak / MB).toFixed(0).padStart(5)} MB   ${r.shutdownMs.toFixed(0).padStart(6)} ms (${r.live} live)`);
  // One sender, a message at a time: how a Telegram bot's updates come in (channels/telegram accepts
  // each update, then writes its offset, before the next). Printed beside the target, not judged.
  const oneSender = points.includes(1_000) ? await loadScenario(1_000, { passivate: false, senders: 1 }) : undefined;
  if (oneSender) {
    console.log(`one sender         1,000 sessions ${oneSender.ratio.toFixed(2)}× the ideal (the API's 100 senders: ${results.find((r) => r.n === 1_000)!.ratio.toFixed(2)}×)`);
    record({ figure: "1,000 sessions, one sender (as a Telegram bot's updates)", target: "—", measured: `${oneSender.ratio.toFixed(2)}×` });
  }
  const at = (n: number) => results.find((r) => r.n === n);
  const thousand = at(1_000);
  if (thousand) {
    // Judged on the median of three fresh daemons: on this shared machine one run of the same code
    // read anywhere from 1.72× to 2.07× (measured). Every run is printed. The two more each run in a
    // process of their own, as this one did (the 100 point, then 1,000): run here, after the points
    // above, they would find V8's code for the daemon compiled already (1.74× here, then 1.57× and
    // 1.47× after the 10,000 point: measured).
    const ratios = [thousand.ratio];
    for (let i = 0; i < 2; i++) ratios.push(freshThousandInOwnProcess());
    const median = [...ratios].sort((a, b) => a - b)[1]!;
    console.log(`\n1,000 sessions on fresh daemons: ${ratios.map((r) => `${r.toFixed(2)}×`).join(", ")} → median ${median.toFixed(2)}×`);
    record({
      figure: "1,000 sessions × 1 tool call, 50 ms model, vs ideal",
      target: "≤ 1.5×",
      measured: `${median.toFixed(2)}× (median of 3 fresh daemons: ${ratios.map((r) => r.toFixed(2)).join(", ")})`,
      pass: median <= 1.5,
    });
    const p = thousand.rssPassivated!;
    record({ figure: "RSS after every session passivated vs start", target: "≤ 1.2×", measured: `${(p / thousand.rssStart).toFixed(2)}× (${(thousand.rssStart / MB).toFixed(0)} → ${(p / MB).toFixed(0)} MB)`, pass: p / thousand.rssStart <= 1.2 });
    await warmedThousand();
  }
  const tenK = at(10_000);
  if (tenK) {
    record({ figure: "10,000 sessions × 1 tool call vs ideal", target: "≤ 2×", measured: `${tenK.ratio.toFixed(2)}×`, pass: tenK.ratio <= 2 });
    const small = at(1_000) ?? results[0]!;
    // Sub-linear: ten times the sessions, well under ten times the memory above the start.
    const growth = (tenK.peak - tenK.rssStart) / Math.max(1, small.peak - small.rssStart);
    record({ figure: `peak RSS growth, 10,000 vs ${small.n.toLocaleString("en")} sessions`, target: `sub-linear (< ${10_000 / small.n}×)`, measured: `${growth.toFixed(1)}×`, pass: growth < 10_000 / small.n });
    record({ figure: "shutdown with 10,000 live sessions", target: "—", measured: `${(tenK.shutdownMs / 1000).toFixed(1)} s` });
  }
}

/**
 * The 1,000-session point again, on a daemon that has just served a first burst of 1,000 (printed, not
 * judged): V8 has compiled the hot paths by then, as for the CPU-per-turn target's steady burst. On
 * the judged point, a fresh daemon, V8's optimizing compiler runs beside the burst on the same CPUs
 * (~1 s of its threads' CPU for ~1 s of the main thread's here): what is left of the gap to 1.5× is
 * that warm-up, which a daemon pays once.
 */
async function warmedThousand() {
  const model = await fakeModel(50);
  const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100, sessionIdleSeconds: 600 });
  await burst(daemon, ["warm-up"]);
  await burst(daemon, Array.from({ length: 1_000 }, (_, i) => `w${i}`), { inFlight: 100 });
  const before = threadCpu();
  const total = await burst(daemon, Array.from({ length: 1_000 }, (_, i) => `s${i}`), { inFlight: 100 });
  const after = threadCpu();
  const ratio = total / 1_000;
  const cpu = before && after ? `; main thread ${(after.main - before.main).toFixed(0)} ms, other threads ${(after.other - before.other).toFixed(0)} ms` : "";
  console.log(`\n## 1,000 sessions on a daemon that has served a first burst of 1,000 (V8 warmed; 1,000 sessions live before it)`);
  console.log(`total            ${total.toFixed(0)} ms → ${ratio.toFixed(2)}× the ideal${cpu}`);
  record({ figure: "1,000 sessions, on a daemon warmed by a first burst", target: "(information)", measured: `${ratio.toFixed(2)}×` });
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
  // 1,000 sessions at once, twice: the first burst runs while V8 still compiles the hot paths (its
  // optimizing compiler works on other threads: ~1 ms a turn here), the second is a daemon that has
  // run a while. Both are printed; the target is read on the second.
  const first = await measuredBurst(daemon, "c");
  const steady = await measuredBurst(daemon, "p");
  console.log("\n## runtime cost per turn, zero-latency model (2 model calls + 1 tool call per turn)");
  console.log(`one session, serial   ${serial.toFixed(1)} ms per turn (${serialTurns} turns)`);
  for (const [name, b] of [["first burst", first], ["steady burst", steady]] as const) {
    console.log(`${name.padEnd(21)} 1,000 sessions in ${b.wall.toFixed(0)} ms, ${(1_000_000 / b.wall).toFixed(0)} turns/s; CPU ${b.cpuPerTurn.toFixed(2)} ms per turn${b.threads ? ` (main thread ${b.threads.main.toFixed(2)}, other threads ${b.threads.other.toFixed(2)}: GC helpers, V8's compiler, LevelDB's pool)` : ""}`);
  }
  console.log(`synced batches        ${steady.syncedPerTurn.toFixed(1)} per turn (inbox, checkpoints, tool.started, the reply's delivery)`);
  console.log(`LevelDB calls         ${steady.readsPerTurn.toFixed(2)} reads (gets, iterators) and ${steady.writesPerTurn.toFixed(2)} writes per turn (batches coalesced across sessions)`);
  console.log(`actors                ${steady.actorsPerTurn.toFixed(1)} spawned per turn, ${steady.inspectionPerTurn.toFixed(0)} inspection events per turn (a session's start included), ${steady.publishedPerTurn.toFixed(0)} of them published (spawns, stops, state changes, machines' events); inspection runs only while an /api/events client watches, and none does here`);
  await daemon.shutdown();
  model.stop();
  await rm(dir, { recursive: true, force: true });
  // The same I/O by hand (two loopback model calls, a readdir, a synced batch), in the same run.
  const floor = await turnFloor();
  console.log(`physical floor        ${floor.cpuPerTurn.toFixed(2)} ms CPU per turn: the turn's I/O without troupe (test/bench/floor.ts); troupe's steady turn is ${(steady.cpuPerTurn / floor.cpuPerTurn).toFixed(1)}× it`);
  record({ figure: "CPU per turn, 1,000 sessions, zero-latency model", target: "≤ 1.5 ms", measured: `${steady.cpuPerTurn.toFixed(2)} ms (first burst ${first.cpuPerTurn.toFixed(2)} ms; floor ${floor.cpuPerTurn.toFixed(2)} ms)`, pass: steady.cpuPerTurn <= 1.5 });
}

/**
 * Each turn's time from its first checkpoint (`turn_state` awaiting_model, as the bus announces it)
 * to its final state: what a turn holds its slot for, bar preparing it; ideally its two model calls.
 */
function turnTimes(daemon: Daemon) {
  const first = new Map<string, number>();
  const times: number[] = [];
  const sub = daemon.bus.ofType("turn_state").subscribe((e) => {
    if (!first.has(e.turnId)) first.set(e.turnId, e.at);
    else if (["responded", "failed", "cancelled", "max_iterations"].includes(e.state)) times.push(e.at - first.get(e.turnId)!);
  });
  return {
    stop() {
      sub.unsubscribe();
      times.sort((a, b) => a - b);
      return { turns: times.length, mean: times.reduce((a, b) => a + b, 0) / Math.max(1, times.length), p90: times[Math.floor(times.length * 0.9)] ?? 0 };
    },
  };
}

/** How long the main thread has waited, runnable, for a CPU, in ms (Linux schedstat; undefined elsewhere). */
function mainRunqueueWait(): number | undefined {
  try {
    const [, waitNs] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, "utf8").split(" ");
    return Number(waitNs) / 1e6;
  } catch {
    return undefined;
  }
}

/** CPU time of this process's threads in ms, the main thread apart (Linux: /proc/self/task; undefined elsewhere). */
function threadCpu(): { main: number; other: number } | undefined {
  try {
    let main = 0;
    let other = 0;
    for (const tid of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const ms = (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in clock ticks of 10 ms
      if (tid === String(process.pid)) main += ms;
      else other += ms;
    }
    return { main, other };
  } catch {
    return undefined;
  }
}

/** 1,000 new sessions, one message each, against the zero-latency model: CPU and store calls per turn. */
async function measuredBurst(daemon: Daemon, prefix: string) {
  const store = daemon.store;
  const reads = () => [...Object.values(store.readStats.gets), ...Object.values(store.readStats.lists)].reduce((a, b) => a + b, 0);
  const writes = () => store.commitStats.writes + store.unsyncedStats.writes;
  const n = 1_000;
  const before = { cpu: process.cpuUsage(), threads: threadCpu(), synced: store.commitStats.requests, reads: reads(), writes: writes(), tree: { ...daemon.tree.stats } };
  const wall = await burst(daemon, Array.from({ length: n }, (_, i) => `${prefix}${i}`));
  const cpu = process.cpuUsage(before.cpu);
  const threadsAfter = threadCpu();
  return {
    wall,
    cpuPerTurn: (cpu.user + cpu.system) / 1000 / n,
    threads: before.threads && threadsAfter ? { main: (threadsAfter.main - before.threads.main) / n, other: (threadsAfter.other - before.threads.other) / n } : undefined,
    syncedPerTurn: (store.commitStats.requests - before.synced) / n,
    readsPerTurn: (reads() - before.reads) / n,
    writesPerTurn: (writes() - before.writes) / n,
    actorsPerTurn: (daemon.tree.stats.actorsSpawned - before.tree.actorsSpawned) / n,
    inspectionPerTurn: (daemon.tree.stats.inspectionEvents - before.tree.inspectionEvents) / n,
    publishedPerTurn: (daemon.tree.stats.published - before.tree.published) / n,
  };
}

/** The 100 and 1,000 points again in a new process (this file, TROUPE_BENCH_ONLY=fresh-thousand): the 1,000 point's ratio. */
function freshThousandInOwnProcess(): number {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    env: { ...process.env, TROUPE_BENCH_ONLY: "fresh-thousand" },
    stdio: ["ignore", "pipe", "inherit"],
    encoding: "utf8",
  });
  const ratio = /^FRESH_THOUSAND (\S+)$/m.exec(child.stdout)?.[1];
  if (child.status !== 0 || ratio === undefined) throw new Error(`the fresh 1,000-session run failed (exit ${child.status}):\n${child.stdout}`);
  return Number(ratio);
}

if (process.env.TROUPE_BENCH_ONLY === "fresh-thousand") {
  await loadScenario(100, { passivate: false });
  console.log(`FRESH_THOUSAND ${(await loadScenario(1_000, { passivate: false })).ratio}`);
  process.exit(0);
}
if (!(globalThis as { gc?: unknown }).gc) console.log("(run with --expose-gc for settled RSS figures)\n");
if (process.env.TROUPE_BENCH_ONLY !== "overhead") await scaleCurve();
await overheadScenario();
