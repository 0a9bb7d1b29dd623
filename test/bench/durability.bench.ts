/**
 * Group commit and the price of durability (part of `npm run bench`).
 *
 * 1. The floor: raw LevelDB batches with sync, one after another (one fsync each), beside the same
 *    writes from 100 concurrent writers through troupe's group-commit writer.
 * 2. Durable turns (2 model calls + 1 tool each) against a zero-latency model with
 *    1, 10 and 100 sessions at once: turns/s and fsyncs per turn.
 * 3. The same turns with the per-transition checkpoints off, to show what checkpointing costs.
 * The daemon and the group-commit writer run in this process from troupe's bundle, compiled as the
 * CLI is, not from its source under tsx (test/bench/harness.ts says why).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Level } from "level";
import { burst, daemonFor, fakeModel, loadTroupe } from "./harness.js";
import { record } from "./summary.js";

const { openStore } = await loadTroupe();

const VALUE = { text: "x".repeat(2_000), n: 1 };

async function rawFloor(writes: number): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "troupe-floor-"));
  const db = new Level<string, unknown>(dir, { valueEncoding: "json" });
  await db.open();
  const t0 = performance.now();
  for (let i = 0; i < writes; i++) await db.batch([{ type: "put", key: `k${i}`, value: VALUE }], { sync: true });
  const ms = performance.now() - t0;
  await db.close();
  await rm(dir, { recursive: true, force: true });
  return ms;
}

async function grouped(writes: number, writers: number) {
  const dir = await mkdtemp(join(tmpdir(), "troupe-group-"));
  const store = await openStore(dir);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = w; i < writes; i += writers) await store.batch([{ type: "put", sublevel: "meta", key: `k${i}`, value: VALUE }], { sync: true });
    }),
  );
  const ms = performance.now() - t0;
  const stats = { ...store.commitStats };
  await store.close();
  await rm(dir, { recursive: true, force: true });
  return { ms, stats };
}

async function turns(url: string, sessions: number, total: number, durable: boolean) {
  const { daemon, dir } = await daemonFor(url, { maxConcurrentTurns: 100 }, { durable });
  await burst(daemon, ["warm-up"]);
  const before = { ...daemon.store.commitStats };
  let elapsed = 0;
  for (let done = 0; done < total; done += sessions) {
    elapsed += await burst(daemon, Array.from({ length: sessions }, (_, i) => `s${i}`));
  }
  const writes = daemon.store.commitStats.writes - before.writes;
  const requests = daemon.store.commitStats.requests - before.requests;
  await daemon.shutdown();
  await rm(dir, { recursive: true, force: true });
  return { perSecond: (total / elapsed) * 1000, msPerTurn: elapsed / total, fsyncsPerTurn: writes / total, batchesPerTurn: requests / total };
}

const writes = 500;
const floor = await rawFloor(writes);
const group = await grouped(writes, 100);
console.log("## LevelDB synced batches (2 KB each)");
console.log(`raw, one at a time        ${((writes / floor) * 1000).toFixed(0)} batches/s (${((floor / writes) * 1000).toFixed(0)} µs each)`);
console.log(
  `group commit, 100 writers ${((writes / group.ms) * 1000).toFixed(0)} batches/s: ${group.stats.requests} requests in ${group.stats.writes} fsyncs (largest group ${group.stats.largestGroup}), ${(floor / group.ms).toFixed(1)}× the floor`,
);

const model = await fakeModel(0);
console.log("\n## durable turns, zero-latency model (2 model calls, 1 tool call per turn)");
console.log("sessions  checkpoints  turns/s  ms/turn  synced batches/turn  fsyncs/turn");
const rows: Array<[number, boolean, Awaited<ReturnType<typeof turns>>]> = [];
for (const [sessions, total] of [[1, 100], [10, 300], [100, 1_000]] as const) {
  for (const durable of [true, false]) {
    const r = await turns(model.url, sessions, total, durable);
    rows.push([sessions, durable, r]);
    console.log(`${String(sessions).padEnd(8)}  ${(durable ? "on" : "off").padEnd(11)}  ${r.perSecond.toFixed(0).padStart(7)}  ${r.msPerTurn.toFixed(2).padStart(7)}  ${r.batchesPerTurn.toFixed(2).padStart(19)}  ${r.fsyncsPerTurn.toFixed(2).padStart(11)}`);
  }
}
const costAt = (n: number) => {
  const on = rows.find(([s, d]) => s === n && d)![2];
  const off = rows.find(([s, d]) => s === n && !d)![2];
  return `${(on.msPerTurn - off.msPerTurn).toFixed(2)} ms per turn (${(on.msPerTurn / off.msPerTurn).toFixed(2)}× the time without)`;
};
console.log(`\ncheckpointing costs ${costAt(1)} with 1 session, ${costAt(100)} with 100`);
{
  const on = rows.find(([n, d]) => n === 100 && d)![2];
  const off = rows.find(([n, d]) => n === 100 && !d)![2];
  const ratio = on.msPerTurn / off.msPerTurn;
  record({
    figure: "durable turn vs checkpoints off, 100 sessions",
    target: "≤ 1.3×",
    measured: `${ratio.toFixed(2)}× (floor: ${((writes / floor) * 1000).toFixed(0)} raw synced batches/s)`,
    pass: ratio <= 1.3,
  });
}
model.stop();
