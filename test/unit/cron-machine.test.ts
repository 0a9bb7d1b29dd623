import { createActor, fromPromise } from "xstate";
import { describe, expect, it } from "vitest";
import { cronMachine, type FireOutput } from "../../machines/cron.machine.js";
import { CRON_ACTOR_ID } from "../../machines/supervision.js";
import { supervisorMachine } from "../../machines/supervisor.machine.js";
import { until } from "../helpers/wait.js";

/** The scheduler under the supervisor, with a stand-in for its firing step. */
function start(fire: (call: number) => Promise<FireOutput>) {
  let calls = 0;
  const cron = cronMachine.provide({ actors: { fireDue: fromPromise<FireOutput, { startedAt: number }>(() => fire(++calls)) } });
  const actor = createActor(supervisorMachine.provide({ actors: { cron: cron as never } }), {
    input: { policy: { maxRestarts: 3, windowMs: 10_000, baseDelayMs: 30, maxDelayMs: 200 }, sessionIdleMs: 60_000 },
  }).start();
  actor.send({ type: "cron.start", startedAt: 0 });
  const state = () => (actor.getSnapshot().children[CRON_ACTOR_ID]?.getSnapshot() as { value?: unknown } | undefined)?.value;
  return { actor, calls: () => calls, state };
}

describe("the cron scheduler actor", () => {
  it("fires at start, waits for the next deadline, and a change to the jobs wakes it at once", async () => {
    const s = start(async () => ({ waitMs: 60_000, started: 0 }));
    await until(() => s.state() === "waiting", 5_000, "the first firing");
    expect(s.calls()).toBe(1);
    s.actor.send({ type: "cron.changed" });
    await until(() => s.calls() === 2 && s.state() === "waiting", 5_000, "a firing for the change");
    s.actor.stop();
  });

  it("fires again when its deadline comes", async () => {
    const s = start(async () => ({ waitMs: 50, started: 0 }));
    await until(() => s.calls() >= 3, 5_000, "three firings");
    s.actor.stop();
  });

  it("a failed firing (a store error) fails the actor; the supervisor restarts it and it re-arms from the store", async () => {
    const s = start(async (call) => {
      if (call === 1) throw new Error("disk on fire");
      return { waitMs: 60_000, started: 0 };
    });
    await until(() => s.calls() === 2 && s.state() === "waiting", 5_000, "the restarted scheduler's firing");
    const record = s.actor.getSnapshot().context.children[CRON_ACTOR_ID];
    expect(record).toMatchObject({ kind: "cron", status: "running", lastError: "disk on fire" });
    expect(record?.failures).toHaveLength(1);
    s.actor.stop();
  });

  it("jobs changed while firing: it fires once more straight after", async () => {
    let release!: () => void;
    const s = start(async (call) => {
      if (call === 1) await new Promise<void>((r) => (release = r));
      return { waitMs: 60_000, started: 0 };
    });
    await until(() => s.calls() === 1 && release !== undefined, 5_000, "the first firing");
    s.actor.send({ type: "cron.changed" });
    release();
    await until(() => s.calls() === 2 && s.state() === "waiting", 5_000, "the second firing");
    s.actor.stop();
  });
});
