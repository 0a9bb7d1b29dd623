/**
 * Parallel subagents (part of `npm run bench`): 8 subagents, each making 3 model calls of 200 ms
 * (two tool rounds, then the report), against one subagent alone. Ideal: the 8 take as long as 1.
 * The daemon runs in this process from troupe's bundle, compiled as the CLI is, not from its source
 * under tsx (test/bench/harness.ts says why).
 */
import { rm } from "node:fs/promises";
import type { Daemon } from "../../src/daemon-types.js";
import { daemonFor, fakeModel } from "./harness.js";

async function runSubagents(daemon: Daemon, n: number, tag: string): Promise<number> {
  const origin = { sessionKey: "api:bench", channel: "api", chatId: "bench", turnId: tag };
  const t0 = performance.now();
  const started = await Promise.all(
    Array.from({ length: n }, (_, i) => daemon.subagents.spawn({ key: `${tag}:${i}`, task: `task ${i}`, label: `job ${i}`, wait: true, origin })),
  );
  const done = await Promise.all(started.map(({ record }) => daemon.subagents.wait(record.id, new AbortController().signal)));
  const ms = performance.now() - t0;
  if (done.some((r) => r.status !== "responded")) throw new Error(`a subagent ended ${done.map((r) => r.status).join(", ")}`);
  return ms;
}

const model = await fakeModel(200, 3);
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentSubagents: 8 });
await runSubagents(daemon, 1, "warm-up");
const one = await runSubagents(daemon, 1, "one");
const eight = await runSubagents(daemon, 8, "eight");
let serial = 0;
for (let i = 0; i < 8; i++) serial += await runSubagents(daemon, 1, `serial-${i}`);
console.log("\n## parallel subagents: 3 model calls of 200 ms each (ideal for one: 600 ms)");
console.log(`1 subagent        ${one.toFixed(0)} ms`);
console.log(`8 subagents       ${eight.toFixed(0)} ms  (${(eight / one).toFixed(2)}× the time of one)`);
console.log(`8 one by one      ${serial.toFixed(0)} ms  → in parallel they took ${(eight / serial).toFixed(2)} of the serial time (${(serial / eight).toFixed(1)}× faster)`);
await daemon.shutdown();
model.stop();
await rm(dir, { recursive: true, force: true });
