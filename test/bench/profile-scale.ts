/**
 * A profile of the daemon bench's 1,000-session point (one tool call each, 50 ms model, 100 turns
 * at once, 100 senders), for finding what holds a turn in its slot and what the main thread does:
 * `PROF_OUT=/tmp/scale.cpuprofile node --expose-gc --import tsx test/bench/profile-scale.ts`, or
 * `PROF=heap` for V8's sampling heap profile (what is allocated, young collections included). As
 * in daemon.bench.ts, a 100-session daemon runs first in the same process, so V8 has compiled the
 * hot paths as far as it has there. Positions are in dist-bench/troupe-bench.cjs, whose source map
 * names troupe's files. The profiler adds to the CPU it prints; read shares, not the figure.
 */
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { burst, daemonFor, fakeModel } from "./harness.js";

const model = await fakeModel(50);
{
  const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100, sessionIdleSeconds: 600 });
  await burst(daemon, ["warm-up"]);
  await burst(daemon, Array.from({ length: 100 }, (_, i) => `w${i}`), { inFlight: 100 });
  await daemon.shutdown();
  await rm(dir, { recursive: true, force: true });
}
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100, sessionIdleSeconds: 2 });
await burst(daemon, ["warm-up"]);
(globalThis as { gc?: () => void }).gc?.();
const heap = process.env.PROF === "heap";
const s = new Session();
s.connect();
if (heap) {
  await s.post("HeapProfiler.enable");
  await s.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
} else {
  await s.post("Profiler.enable");
  await s.post("Profiler.setSamplingInterval", { interval: 250 });
  await s.post("Profiler.start");
}
const c0 = process.cpuUsage();
const wall = await burst(daemon, Array.from({ length: 1000 }, (_, i) => `s${i}`), { inFlight: 100 });
const c = process.cpuUsage(c0);
const out = process.env.PROF_OUT ?? (heap ? "scale.heapprofile" : "scale.cpuprofile");
const { profile } = heap ? await s.post("HeapProfiler.stopSampling") : await s.post("Profiler.stop");
writeFileSync(out, JSON.stringify(profile));
console.log(`wall ${wall.toFixed(0)} ms (${(wall / 1000).toFixed(2)}× the ideal), CPU ${((c.user + c.system) / 1000 / 1000).toFixed(2)} ms per turn; ${out}`);
await daemon.shutdown();
model.stop();
await rm(dir, { recursive: true, force: true });
