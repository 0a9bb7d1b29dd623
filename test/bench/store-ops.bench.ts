/**
 * Where a turn's store writes spend the main thread (part of `npm run bench`, figures printed for
 * information): the ops of 100 real turns (overhead scenario: 2 model calls + 1 tool call, captured
 * from a daemon) replayed by hand. Per turn: the values' JSON text (encodeOps), classic-level's
 * chained batch fed the encoded ops (its native put, op by op), the synchronous part of one LevelDB
 * write call (a hop to its thread pool: a machine figure), the whole write path through the store
 * (group commit, record cache) beside the same ops through abstract-level's public batch (which
 * clones and normalises every op), and a session meta read
 * back from what this process wrote (parsed, not checked) against the same read from LevelDB (zod).
 * `node --import tsx test/bench/store-ops.bench.ts`.
 * The daemon and the store's functions run in this process from troupe's bundle, compiled as the
 * CLI is, not from its source under tsx (test/bench/harness.ts says why).
 */
import { mkdtemp, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ClassicLevel } from "classic-level";
import type { StoreOp } from "../../src/store/store.js";
import { burst, daemonFor, fakeModel, loadTroupe } from "./harness.js";
import { record } from "./summary.js";

const { encodeOps, openStore, sessionMetaSchema } = await loadTroupe();

const TURNS = 100;

/** This thread's CPU in ms (Linux: /proc/self/task; 10 ms ticks), or the process's elsewhere. */
function mainThreadCpu(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  }
}

/** CPU µs per call of `f`, over enough rounds to be read. */
function perCall(f: () => void, rounds: number): number {
  for (let i = 0; i < Math.min(200, rounds); i++) f();
  const c0 = process.cpuUsage();
  for (let i = 0; i < rounds; i++) f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / rounds;
}

// 1. A turn's batches, as a daemon hands them to its store.
const model = await fakeModel(0);
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100 });
await burst(daemon, Array.from({ length: 50 }, (_, i) => `w${i}`));
const batches: Array<{ ops: StoreOp[]; sync: boolean }> = [];
const batch = daemon.store.batch.bind(daemon.store);
daemon.store.batch = (ops: StoreOp[], opts?: { sync?: boolean }) => {
  // A copy of each value as stored, so a later change by its writer does not change the replay.
  batches.push({ ops: ops.map((op) => (op.type === "put" ? { ...op, value: JSON.parse(JSON.stringify(op.value)) as unknown } : op)), sync: opts?.sync === true });
  return batch(ops, opts);
};
await burst(daemon, Array.from({ length: TURNS }, (_, i) => `t${i}`));
daemon.store.batch = batch;
await daemon.shutdown();
model.stop();
await rm(dir, { recursive: true, force: true });

const allOps = batches.flatMap((b) => b.ops);
const encoded = batches.map((b) => encodeOps(b.ops));
const flat = encoded.flat();
const bytes = flat.reduce((n, op) => n + op.key.length + (op.type === "put" ? op.value.length : 0), 0);
const synced = batches.filter((b) => b.sync).length;
console.log("\n## a turn's store writes (ops of 100 captured turns replayed)");
console.log(`per turn              ${(batches.length / TURNS).toFixed(1)} batches (${(synced / TURNS).toFixed(1)} synced), ${(allOps.length / TURNS).toFixed(1)} ops, ${(bytes / TURNS / 1024).toFixed(1)} KB`);

// 2. Encoding, and classic-level's native put, per turn.
const encodeUs = perCall(() => batches.forEach((b) => encodeOps(b.ops)), 50) / TURNS;
const scratch = await promisify(mkdtemp)(join(tmpdir(), "troupe-store-ops-"));
const raw = new ClassicLevel<string, string>(join(scratch, "raw"));
await raw.open();
const putUs =
  perCall(() => {
    const b = raw.batch();
    for (const op of flat) {
      if (op.type === "put") b.put(op.key, op.value);
      else b.del(op.key);
    }
    void b.close();
  }, 50) / TURNS;
let writeNs = 0n;
const writes = 200;
for (let i = 0; i < writes; i++) {
  const b = raw.batch().put(`probe${i}`, "x".repeat(200));
  const t = process.hrtime.bigint();
  const done = b.write({ sync: true });
  writeNs += process.hrtime.bigint() - t;
  await done;
}
console.log(`encodeOps             ${encodeUs.toFixed(1)} µs per turn (JSON text of every value, keys prefixed)`);
console.log(`native puts           ${putUs.toFixed(1)} µs per turn (classic-level's chained batch, public API, no write)`);
console.log(`one write call        ${(Number(writeNs) / writes / 1000).toFixed(1)} µs of the main thread before it returns (its hop to LevelDB's thread pool; a turn makes ~1)`);

// 3. The whole write path: the 100 turns at once through the store (group commit, record cache),
// REPLAYS times, against the same ops pre-encoded through the public db.batch, in as many writes as the store made.
const REPLAYS = 10;
let groups = 0;
async function replayStore(): Promise<number> {
  const store = await openStore(join(scratch, `store-${Math.random().toString(36).slice(2)}`));
  const t0 = mainThreadCpu();
  for (let r = 0; r < REPLAYS; r++) {
    // Each turn's batches in order, the turns concurrent (as the daemon's sessions run).
    const chains = Array.from({ length: TURNS }, () => Promise.resolve());
    batches.forEach((b, i) => {
      chains[i % TURNS] = chains[i % TURNS]!.then(() => store.batch(b.ops, { sync: b.sync }));
    });
    await Promise.all(chains);
  }
  const ms = mainThreadCpu() - t0;
  groups = (store.commitStats.writes + store.unsyncedStats.writes) / REPLAYS;
  await store.close();
  return ms;
}
async function replayRaw(): Promise<number> {
  const db = new ClassicLevel<string, string>(join(scratch, `raw-${Math.random().toString(36).slice(2)}`));
  await db.open();
  const size = Math.ceil(encoded.length / Math.max(1, groups));
  const t0 = mainThreadCpu();
  for (let r = 0; r < REPLAYS; r++) for (let i = 0; i < encoded.length; i += size) await db.batch(encoded.slice(i, i + size).flat(), { sync: true });
  const ms = mainThreadCpu() - t0;
  await db.close();
  return ms;
}
const storeMs: number[] = [];
const rawMs: number[] = [];
for (let round = 0; round < 3; round++) {
  storeMs.push(await replayStore());
  rawMs.push(await replayRaw());
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const perTurnUs = (ms: number) => ((ms * 1000) / TURNS / REPLAYS).toFixed(0);
console.log(`through the store     ${perTurnUs(median(storeMs))} µs of main-thread CPU per turn (${(groups / TURNS).toFixed(2)} LevelDB writes a turn; median of 3)`);
console.log(`db.batch(array)       ${perTurnUs(median(rawMs))} µs per turn (the same ops pre-encoded through abstract-level's public batch, as many synced writes)`);

// 4. A session meta read back: from what this process wrote (parsed, not checked) and from LevelDB (checked with zod).
const store = await openStore(join(scratch, "reads"));
const metaOp = allOps.find((op) => op.type === "put" && op.sublevel === "sessions" && op.key.startsWith("meta:"))!;
await store.batch([metaOp], { sync: true });
const reads = 2_000;
let t = process.hrtime.bigint();
for (let i = 0; i < reads; i++) await store.get("sessions", metaOp.key, sessionMetaSchema);
const ownUs = Number(process.hrtime.bigint() - t) / reads / 1000;
await store.close();
const cold = await openStore(join(scratch, "reads"));
t = process.hrtime.bigint();
for (let i = 0; i < reads; i++) await cold.get("sessions", metaOp.key, sessionMetaSchema);
const diskUs = Number(process.hrtime.bigint() - t) / reads / 1000;
await cold.close();
console.log(`session meta read     ${ownUs.toFixed(1)} µs when this process wrote it (JSON.parse only); ${diskUs.toFixed(1)} µs from another run's write (LevelDB once, then the cache; zod each time)`);
await raw.close();
await rm(scratch, { recursive: true, force: true });

record({
  figure: "store write path per turn (main thread)",
  target: "(information)",
  measured: `${perTurnUs(median(storeMs))} µs through the store vs ${perTurnUs(median(rawMs))} µs via db.batch; encodeOps ${encodeUs.toFixed(0)} µs, native puts ${putUs.toFixed(0)} µs`,
});
