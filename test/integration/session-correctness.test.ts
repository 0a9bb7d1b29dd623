import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { filter } from "rxjs";
import { describe, expect, it } from "vitest";
import type { Daemon } from "../../src/daemon-types.js";
import { listOpenTurns } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { replyTo, sendApi as send, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

/** The text of the newest user message the model was sent (after the runtime-context block). */
const lastUser = (req: RecordedRequest) => {
  const m = [...req.body.messages].reverse().find((x) => x.role === "user");
  const text = typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
  return text.split("\n").at(-1) ?? "";
};

const turnState = (daemon: Daemon, chatId: string) => {
  const session = daemon.tree.tree()?.children.find((c) => c.id === `session:api:${chatId}`);
  return session?.children.find((c) => c.kind === "turn");
};

describe("sessions: correctness across recovery, /stop and failures", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let daemon: Daemon | undefined;
  closeAfterEach(() => [daemon, fake]);

  it("a message injected into a turn that is stopped and resumed later is still answered", async () => {
    let slow = true;
    fake = await startFakeOpenAi([], (req) => ({ content: `answer to ${lastUser(req)}`, delayMs: slow ? 10_000 : 0 }));
    const dir = await tmp();
    daemon = await startDaemon(dir, fake.url, { defaults: { maxToolIterations: 5 } }, { shutdownGraceMs: 50 });
    const first = await send(daemon, "inj", "first");
    await until(() => fake!.requests.length === 1, 10_000, "the first model call");
    const second = await send(daemon, "inj", "second");
    // The injected message is in the turn's checkpoint before the daemon stops.
    await until(() => turnState(daemon!, "inj")?.state === "awaiting_model", 5_000, "the turn");
    await daemon.shutdown();
    daemon = undefined;
    slow = false;
    daemon = await startDaemon(dir, fake.url, {}, { shutdownGraceMs: 50 });
    const [a, b] = await Promise.all([replyTo(daemon, first), replyTo(daemon, second)]);
    expect(a?.content).toBe("answer to first");
    expect(b?.content).toBe("answer to second");
    expect(await listOpenTurns(daemon.store)).toEqual([]);
  });

  it("/stop to a session with no actor (passivated or new) is a command, never a message for the model", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "the model answered" }));
    daemon = await startDaemon(await tmp(), fake.url);
    const stop = await send(daemon, "fresh", "/stop");
    expect((await replyTo(daemon, stop)).content).toBe("Nothing is running.");
    expect(fake.requests).toHaveLength(0);
  });

  it("/new while a turn runs cancels it and starts a new session at once; /history is answered meanwhile (nanobot dispatches both)", async () => {
    fake = await startFakeOpenAi([], (req) => ({ content: `answer to ${lastUser(req)}`, delayMs: lastUser(req) === "long one" ? 30_000 : 0 }));
    daemon = await startDaemon(await tmp(), fake.url, {}, { shutdownGraceMs: 50 });
    await send(daemon, "nw", "long one");
    await until(() => fake!.requests.length === 1, 10_000, "the long turn's model call");
    const history = await send(daemon, "nw", "/history");
    expect((await replyTo(daemon, history)).content).toMatch(/A turn is running/);
    const fresh = await send(daemon, "nw", "/new");
    // Well before the 30 s model call would have answered.
    expect((await replyTo(daemon, fresh)).content).toMatch(/^New session started/);
    // The long turn was cancelled: nothing of it is open, and it ended without its model's answer.
    expect(await listOpenTurns(daemon.store)).toEqual([]);
    expect(fake.requests.filter((r) => lastUser(r) === "long one")).toHaveLength(1);
    const after = await send(daemon, "nw", "hello again");
    expect((await replyTo(daemon, after)).content).toBe("answer to hello again");
    // The new session's history does not hold the cancelled turn.
    const last = fake.requests.at(-1)!.body.messages.map((m) => JSON.stringify(m.content)).join("\n");
    expect(last).not.toContain("long one");
  }, 60_000);

  it("/stop during recovery cancels the resumed turn", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "too late", delayMs: 10_000 }));
    const dir = await tmp();
    daemon = await startDaemon(dir, fake.url, {}, { shutdownGraceMs: 50 });
    const first = await send(daemon, "rec", "think hard");
    await until(() => fake!.requests.length === 1, 10_000, "the first model call");
    await daemon.shutdown();
    // Restarted: recovery wakes the session; /stop arrives while it loads.
    daemon = await startDaemon(dir, fake.url, {}, { shutdownGraceMs: 50 });
    const outbound: Array<{ content: string; answers: string[] }> = [];
    daemon.bus.ofType("outbound").subscribe((e) => outbound.push(e));
    const stop = await send(daemon, "rec", "/stop");
    const answer = (id: string) => until(() => outbound.find((e) => e.answers.includes(id)), 10_000, `the answer to ${id}`);
    expect((await answer(first)).content).toBe("Stopped.");
    expect((await answer(stop)).content).toMatch(/^Stopping/);
    expect(await listOpenTurns(daemon.store)).toEqual([]);
  });

  it("a checkpoint that cannot be written is not answered with an error and again later: the turn resumes and is answered once", async () => {
    fake = await startFakeOpenAi([], (req) =>
      req.body.messages.some((m) => m.role === "tool") ? { content: "finished" } : { toolCalls: [{ name: "list_dir", arguments: {} }] },
    );
    daemon = await startDaemon(await tmp(), fake.url, {}, { policy: { baseDelayMs: 20 } });
    const outbound: string[] = [];
    daemon.bus.ofType("outbound").pipe(filter((e) => e.chatId === "cp")).subscribe((e) => outbound.push(e.content));
    const batch = daemon.store.batch.bind(daemon.store);
    let failures = 0;
    daemon.store.batch = async (ops, opts) => {
      // tools_completed's checkpoint shares the next one's batch (its journal entry rides there).
      const cp = ops.find((op) => op.type === "put" && op.sublevel === "journal" && (op.value as { kind?: string }).kind === "state") as { value: { state: string } } | undefined;
      if (cp?.value.state === "tools_completed" && failures === 0) {
        failures++;
        throw new Error("IO error: No space left on device");
      }
      return batch(ops, opts);
    };
    const id = await send(daemon, "cp", "list the workspace");
    expect((await replyTo(daemon, id)).content).toBe("finished");
    await until(() => listOpenTurns(daemon!.store).then((t) => t.length === 0), 5_000, "the turn to close");
    expect(failures).toBe(1);
    expect(outbound).toEqual(["finished"]);
  });

  it("the turn is the session's child: the live tree shows it with its own state", async () => {
    fake = await startFakeOpenAi([], () => ({ content: "ok", delayMs: 1_000 }));
    daemon = await startDaemon(await tmp(), fake.url);
    const id = await send(daemon, "tree", "hello");
    const turn = await until(() => turnState(daemon!, "tree"), 5_000, "the turn in the tree");
    expect(turn).toMatchObject({ id: expect.stringMatching(/^turn:api:tree:\S+$/), kind: "turn", machine: "turn", state: "awaiting_model" });
    await replyTo(daemon, id);
    await until(() => turnState(daemon!, "tree") === undefined, 5_000, "the turn to leave the tree");
  });

  it("an image sent while a turn runs reaches the model as an image part", async () => {
    fake = await startFakeOpenAi([], (req) =>
      req.body.messages.some((m) => m.role === "tool") ? { content: "seen" } : { toolCalls: [{ name: "list_dir", arguments: {} }], delayMs: 400 },
    );
    const dir = await tmp();
    daemon = await startDaemon(dir, fake.url);
    const png = join(dir, "pic.png");
    await writeFile(png, Buffer.from("89504e470d0a1a0a", "hex"));
    const first = await send(daemon, "img", "look at what I send next");
    await until(() => fake!.requests.length === 1, 5_000, "the first model call");
    await daemon.accept("api", { chatId: "img", senderId: "u", content: "this one", media: [png] });
    await replyTo(daemon, first);
    const injected = fake.requests[1]!.body.messages.at(-1)!;
    expect(injected.role).toBe("user");
    expect(injected.content).toEqual([
      { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from("89504e470d0a1a0a", "hex").toString("base64")}` } },
      { type: "text", text: "this one" },
    ]);
  });
});
