/**
 * A CPU profile of the steady burst of the overhead scenario (1,000 sessions, one tool call each,
 * zero-latency model), for finding where a turn's CPU goes:
 * `PROF_OUT=/tmp/burst.cpuprofile node --import tsx test/bench/profile-burst.ts`. The profiler
 * itself adds ~20% to the CPU it prints; read shares, not the figure.
 * The daemon runs in this process from troupe's bundle, compiled as the CLI is, not from its source
 * under tsx (test/bench/harness.ts says why).
 */
import { Session } from "node:inspector/promises";
import { writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { burst, daemonFor, fakeModel } from "./harness.js";
const model = await fakeModel(0);
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 100 });
await burst(daemon, ["warm-up"]);
await burst(daemon, Array.from({ length: 1000 }, (_, i) => `c${i}`));
const s = new Session(); s.connect();
await s.post("Profiler.enable"); await s.post("Profiler.setSamplingInterval", { interval: 200 }); await s.post("Profiler.start");
const c0 = process.cpuUsage();
const wall = await burst(daemon, Array.from({ length: 1000 }, (_, i) => `p${i}`));
const c = process.cpuUsage(c0);
const { profile } = await s.post("Profiler.stop");
writeFileSync(process.env.PROF_OUT ?? "burst.cpuprofile", JSON.stringify(profile));
console.log(`wall ${wall.toFixed(0)} ms cpu/turn ${((c.user + c.system) / 1000 / 1000).toFixed(2)} ms`);
await daemon.shutdown(); model.stop(); await rm(dir, { recursive: true, force: true });
