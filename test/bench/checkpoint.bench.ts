/**
 * A checkpoint costs O(change), not O(history) (part of `npm run bench`): one session runs 1,000
 * turns back to back (one tool call each, zero-latency model); the bytes its turns write and the
 * time they take are printed around turn 10, 100 and 1,000. Flat is the target: a long session's
 * turn costs what a short one's does. The time judged is the turn's wall time less the fake model's
 * CPU (read to the µs from /proc): the fake model parses each request, a full window by turn 1,000,
 * and that parse is the model's cost, not troupe's; the wall time with it is printed beside.
 * The daemon runs in this process from troupe's bundle, compiled as the CLI is, not from its source
 * under tsx (test/bench/harness.ts says why).
 */
import { rm } from "node:fs/promises";
import { filter, firstValueFrom } from "rxjs";
import type { StoreOp } from "../../src/store/store.js";
import { daemonFor, fakeModel } from "./harness.js";
import { cpuMsOf } from "./proc.js";
import { record } from "./summary.js";

const TURNS = Number(process.env.TROUPE_BENCH_SESSION_TURNS ?? 1_000);
const WINDOW = 10;

const model = await fakeModel(0);
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 10 });
let bytes = 0;
let counting = false;
/** Bytes of the last WINDOW turns by what they hold (a prompt chunk is written only on the turns whose prompt gained one). */
const byKind = new Map<string, number>();
const kindOf = (op: StoreOp) =>
  op.sublevel === "journal"
    ? op.key.endsWith(":input") ? "turn input" : op.key.includes(":msg:") ? "turn messages" : "journal"
    : op.sublevel === "turns" ? "turn records" : op.sublevel === "blobs" ? "prompt chunks" : op.sublevel;
const batch = daemon.store.batch.bind(daemon.store);
daemon.store.batch = (ops: StoreOp[], opts?: { sync?: boolean }) => {
  for (const op of ops) {
    const n = op.key.length + (op.type === "put" ? JSON.stringify(op.value).length : 0);
    bytes += n;
    if (counting) byKind.set(kindOf(op), (byKind.get(kindOf(op)) ?? 0) + n);
  }
  return batch(ops, opts);
};

// One untimed turn in another chat first: the first model call loads the SDK and the tokenizer, which is not turn 10's cost.
const warm = await daemon.accept("api", { chatId: "warm-up", senderId: "bench", content: "warm up" });
await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.includes(warm))));

/**
 * The fake model runs in its own process, so its time is not in the CPU column, but it parses every
 * request, a full window by turn 1,000: its share of the wall time grows with the window, and is
 * printed apart so troupe's own is read off.
 */
const modelCpu = (): number => cpuMsOf(model.pid);

const perTurn: Array<{ bytes: number; ms: number; cpu: number; model: number }> = [];
for (let i = 0; i < TURNS; i++) {
  const before = bytes;
  counting = i >= TURNS - WINDOW;
  const m0 = modelCpu();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const id = await daemon.accept("api", { chatId: "long", senderId: "bench", content: `turn ${i}: list the workspace` });
  await firstValueFrom(daemon.bus.ofType("outbound").pipe(filter((e) => e.answers.includes(id))));
  const cpu = process.cpuUsage(c0);
  perTurn.push({ bytes: bytes - before, ms: performance.now() - t0, cpu: (cpu.user + cpu.system) / 1000, model: modelCpu() - m0 });
}
await daemon.shutdown();
model.stop();
await rm(dir, { recursive: true, force: true });

const around = (n: number) => {
  const rows = perTurn.slice(Math.max(0, n - WINDOW), n);
  const mean = (f: (r: (typeof rows)[number]) => number) => rows.reduce((s, r) => s + f(r), 0) / rows.length;
  return { bytes: mean((r) => r.bytes), ms: mean((r) => r.ms), cpu: mean((r) => r.cpu), model: mean((r) => r.model) };
};
console.log(`\n## one session, ${TURNS} turns back to back (1 tool call each): bytes written and time per turn, mean of ${WINDOW} turns`);
// CPU is this process's (the daemon's; the fake model runs in its own): steadier than wall time on a shared machine.
console.log("turn    bytes/turn   ms/turn  CPU ms/turn  fake model CPU ms/turn (its own process; in ms/turn, not in CPU)");
const marks = [10, 100, 1_000].filter((n) => n <= TURNS);
for (const n of marks) {
  const a = around(n);
  console.log(`${String(n).padEnd(6)}  ${a.bytes.toFixed(0).padStart(10)}  ${a.ms.toFixed(2).padStart(8)}  ${a.cpu.toFixed(2).padStart(11)}  ${a.model.toFixed(2).padStart(22)}`);
}
console.log(`the last ${WINDOW} turns' bytes per turn by what they hold: ${[...byKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / WINDOW).toFixed(0)}`).join(", ")}`);
const first = around(10);
const last = around(marks.at(-1)!);
// The model parses each request in the turn's path: what is left of the wall time is troupe's (and the
// loopback's). That is the judged time: a turn's own cost must not grow with its session; the model's
// parse of a longer window is the model's (a real one's latency grows with its context too). The wall
// time with the model's share in it is recorded beside, as information.
const own = (a: ReturnType<typeof around>) => a.ms - a.model;
const ownRatio = own(last) / own(first);
console.log(`ms/turn less the fake model's CPU: ${own(first).toFixed(2)} → ${own(last).toFixed(2)} ms (${ownRatio.toFixed(2)}×)`);
const bytesRatio = last.bytes / first.bytes;
const msRatio = last.ms / first.ms;
record({ figure: `bytes/turn, turn ${marks.at(-1)} vs turn 10`, target: "flat (≤ 1.5×)", measured: `${bytesRatio.toFixed(2)}× (${first.bytes.toFixed(0)} → ${last.bytes.toFixed(0)} B)`, pass: bytesRatio <= 1.5 });
record({ figure: `ms/turn, turn ${marks.at(-1)} vs turn 10, less the fake model's CPU`, target: "flat (≤ 1.5×)", measured: `${ownRatio.toFixed(2)}× (${own(first).toFixed(1)} → ${own(last).toFixed(1)} ms)`, pass: ownRatio <= 1.5 });
record({ figure: `ms/turn with the fake model's parse in it`, target: "(information)", measured: `${msRatio.toFixed(2)}× (${first.ms.toFixed(1)} → ${last.ms.toFixed(1)} ms; the model's CPU ${first.model.toFixed(1)} → ${last.model.toFixed(1)} ms)` });
const cpuRatio = last.cpu / first.cpu;
record({ figure: `CPU ms/turn, turn ${marks.at(-1)} vs turn 10`, target: "flat (≤ 1.5×)", measured: `${cpuRatio.toFixed(2)}× (${first.cpu.toFixed(1)} → ${last.cpu.toFixed(1)} ms)`, pass: cpuRatio <= 1.5 });
