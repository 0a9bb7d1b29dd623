import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEffectsModel } from "../fixtures/effects-model.js";
import type { FakeOpenAi } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { addFigures, BAD, createSweep, emptyFigures, seededRandom, type Figures, type RunSpec } from "../helpers/kill-sweep.js";
import { useTempDirs } from "../helpers/tmp.js";

/**
 * The durability sweep: real gateway processes killed with SIGKILL at random instants (not only at
 * the named fault points) while turns run a non-idempotent exec and a write_file, with 1 and with
 * 10 sessions; killed twice in a row during recovery; killed while `troupe daemon stop` shuts one
 * down. Counted over every run, all 0: lost messages, duplicate replies, re-run side effects, stuck
 * turns, failed restarts. The schedule (message gaps, kill instants, model latencies) comes from a
 * seeded PRNG; TROUPE_SWEEP_SEED=<seed> replays it (the interleaving inside the gateway still varies).
 * TROUPE_SWEEP_SCALE=<n> multiplies the number of runs, for a longer sweep by hand; TROUPE_SWEEP_VERBOSE=1
 * prints every run.
 */

const seed = Number(process.env.TROUPE_SWEEP_SEED ?? Date.now() % 1_000_000_000);
const scale = Number(process.env.TROUPE_SWEEP_SCALE ?? "1");
const runs = (n: number) => Math.max(1, Math.round(n * scale));

interface Group {
  name: string;
  /** The i-th run's shape; kills land within the time that shape's work takes unkilled (measured first). */
  specs: (i: number) => Omit<RunSpec, "run" | "killWindowMs">;
  count: number;
  /** Per-run budget for the test timeout: a start or two (~3 s each under load), the work, the checks. */
  perRunMs: number;
}

const groups: Group[] = [
  { name: "1 session, SIGKILL at a random instant", count: runs(16), perRunMs: 15_000, specs: () => ({ sessions: 1, messages: 3, mode: "kill" }) },
  { name: "10 sessions, SIGKILL at a random instant", count: runs(14), perRunMs: 20_000, specs: () => ({ sessions: 10, messages: 2, mode: "kill" }) },
  {
    name: "SIGKILL, then again during recovery",
    count: runs(4),
    perRunMs: 30_000,
    specs: (i) => ({ sessions: i % 2 ? 10 : 1, messages: i % 2 ? 2 : 3, mode: "double" }),
  },
  // Each session sends its next message once answered (at most 30) until the shutdown begins; the kill lands 0–300 ms into it.
  { name: "SIGKILL during `troupe daemon stop`", count: runs(3), perRunMs: 40_000, specs: () => ({ sessions: 3, messages: 30, mode: "stop" }) },
];

describe("kill sweep: SIGKILL at random instants, real gateway processes", () => {
  const tmp = useTempDirs();
  const rng = seededRandom(seed);
  let model: FakeOpenAi;
  const verbose = Boolean(process.env.TROUPE_SWEEP_VERBOSE);
  const results: Array<{ name: string; figures: Figures; log: string[]; finished: boolean }> = [];

  beforeAll(async () => {
    // Model latency 20–80 ms a tool call, 60–300 ms a reply (as a real model's, the longest to
    // generate), so the kills find turns in every state and messages arrive during every kind of call.
    const latency = seededRandom(seed ^ 0x5eed);
    model = await startEffectsModel((final) => (final ? 60 + latency() * 240 : 20 + latency() * 60));
  });

  afterAll(async () => {
    await model?.close();
    // What each run did, for a group that went wrong (or did not finish in time).
    for (const r of results) {
      if (!verbose && (!r.finished || BAD.some((k) => r.figures[k] > 0))) console.log(`seed ${seed}, ${r.name}${r.finished ? "" : " (unfinished)"}:\n${r.log.join("\n")}`);
    }
    const total = emptyFigures();
    for (const r of results) addFigures(total, r.figures);
    const cols: Array<[string, keyof Figures]> = [
      ["runs", "runs"],
      ["kills", "kills"],
      ["mid-work", "killsMidWork"],
      ["posted", "posted"],
      ["accepted", "accepted"],
      ["answered", "answered"],
      ["+unconf.", "answeredUnconfirmed"],
      ["exec?", "execInterrupted"],
      ["lost", "lost"],
      ["dup", "duplicates"],
      ["rerun", "reruns"],
      ["stuck", "stuck"],
      ["restart✗", "failedRestarts"],
      ["stop✗", "failedStops"],
      ["nowrite", "missingWrites"],
      ["mismatch", "mismatched"],
      ["s", "ms"],
    ];
    const row = (name: string, f: Figures) =>
      [name.padEnd(42), ...cols.map(([h, k]) => String(k === "ms" ? (f.ms / 1000).toFixed(0) : f[k]).padStart(h.length))].join(" ");
    console.log(
      [
        `kill sweep, seed ${seed} (TROUPE_SWEEP_SEED=${seed} replays the schedule)`,
        ["".padEnd(42), ...cols.map(([h]) => h)].join(" "),
        ...results.map((r) => row(r.name, r.figures)),
        row("total", total),
        "mid-work: the restart found work to recover; +unconf.: answered though the POST broke before `accepted`; exec?: exec results 'interrupted, effect unknown'",
      ].join("\n"),
    );
  });

  for (const [index, group] of groups.entries()) {
    it(
      group.name,
      async () => {
        const home = await tmp();
        await writeHome(home, model.url, { config: { gateway: { port: 0 } } });
        await mkdir(join(home, "workspace"), { recursive: true });
        const sweep = await createSweep(home, rng, { verbose });
        const figures = emptyFigures();
        const result = { name: group.name, figures, log: sweep.log, finished: false };
        results.push(result);
        const t0 = Date.now();
        const windows = new Map<string, number>();
        try {
          for (let i = 0; i < group.count; i++) {
            const spec = { run: index * 100 + i, killWindowMs: 0, ...group.specs(i) };
            const shape = `${spec.sessions}x${spec.messages}`;
            if (spec.mode !== "stop" && !windows.has(shape)) windows.set(shape, await sweep.calibrate({ ...spec, run: index * 100 + 90 + windows.size }));
            // A double kill aims early, so that the restart has work to recover when it is killed again.
            const window = (windows.get(shape) ?? 0) * (spec.mode === "double" ? 0.6 : 1);
            addFigures(figures, await sweep.run({ ...spec, killWindowMs: window }));
          }
        } finally {
          addFigures(figures, await sweep.finish());
          figures.ms = Date.now() - t0;
        }
        result.finished = true;
        const bad = Object.fromEntries(BAD.map((k) => [k, figures[k]]));
        expect(bad, `seed ${seed}`).toEqual(Object.fromEntries(BAD.map((k) => [k, 0])));
        expect(figures.accepted).toBeGreaterThan(0);
        // The sweep means something only if kills hit work in progress (most do; a quarter is a bound that does not flake).
        expect(figures.killsMidWork, `kills that found work in progress, of ${figures.kills}`).toBeGreaterThanOrEqual(Math.ceil(figures.runs / 4));
      },
      group.count * group.perRunMs + 30_000,
    );
  }
});
