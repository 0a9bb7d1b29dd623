import { describe, expect, it } from "vitest";
import { createActor, createMachine, fromCallback, type AnyActorRef } from "xstate";
import { sessionMachine, type SessionEvent, type SessionMessage, type SlotInput } from "../../machines/session.machine.js";
import type { TurnOutput } from "../../machines/turn.machine.js";

const msg = (content: string, id = content): SessionMessage => ({ id, channel: "test", chatId: "1", content, at: 0 });

/**
 * The session machine with stand-ins: the turn records what reaches it, prepareTurn waits until
 * the test lets it go, and the test settles the turn as the composition would.
 */
function session(opts: { loadError?: string; stored?: SessionMessage[]; slotFree?: boolean; first?: SessionMessage } = {}) {
  const reached: string[] = [];
  const injected: string[] = [];
  /** The texts /stop answered with. */
  const stops: string[] = [];
  /** The messages each turn was prepared for. */
  const preparedFor: string[] = [];
  /** The commands answered at once, and whether a turn was running then. */
  const answered: string[] = [];
  /** The input each turn was invoked with. */
  const inputs: unknown[] = [];
  let letPrepare!: () => void;
  const prepared = new Promise<void>((r) => (letPrepare = r));
  let watching: { self: AnyActorRef; turnId: string } | undefined;
  const turn = createMachine({
    context: ({ input }: { input: unknown }) => {
      inputs.push(input);
      return {};
    },
    initial: "running",
    states: { running: { on: { cancel: { target: "cancelled", actions: () => void reached.push("cancel") } } }, cancelled: { type: "final" } },
  });
  const actor = createActor(
    sessionMachine.provide({
      guards: { slotFree: () => opts.slotFree ?? false },
      actors: {
        slot: fromCallback<SessionEvent, SlotInput>(({ sendBack }) => void queueMicrotask(() => sendBack({ type: "slot.granted" }))),
        turn: turn as never,
      },
      actions: {
        load: ({ self }) =>
          void queueMicrotask(() =>
            self.send(opts.loadError ? { type: "session.loadFailed", error: opts.loadError } : { type: "session.loaded", loaded: { queue: opts.stored ?? [], resumeTurnId: null } }),
          ),
        prepareTurn: ({ self }, { message }) => {
          preparedFor.push(message?.id ?? "(resume)");
          void prepared.then(() => self.send({ type: "turn.prepared", prepared: { start: { input: { turnId: "t1", marker: "the prepared turn" } as never }, turnId: "t1" } }));
        },
        inject: (_, { message }) => void injected.push(message.content),
        watchTurn: ({ self }, { turnId }) => void (watching = { self, turnId }),
        stop: (_, { text }) => void stops.push(text),
        takeSlot: () => {},
        discard: () => {},
        notify: () => {},
        answerCommand: (_, { message, busy }) => void answered.push(`${message.content}${busy ? " (busy)" : ""}`),
      },
    }),
    { input: { sessionKey: "test:1", idleMs: 60_000, first: opts.first } },
  ).start();
  const until = async (what: () => boolean) => {
    for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(what()).toBe(true);
  };
  const settle = (takenIds: string[] = []) =>
    watching!.self.send({ type: "turn.settled", turnId: watching!.turnId, output: { takenIds } as unknown as TurnOutput });
  const fail = (error: string) => watching!.self.send({ type: "turn.failed", turnId: watching!.turnId, error });
  return { actor, reached, injected, inputs, stops, preparedFor, answered, letPrepare, until, settle, fail, state: () => JSON.stringify(actor.getSnapshot().value) };
}

/** The session's first message sent and its turn prepared: the session is running it. */
async function running(s: ReturnType<typeof session>) {
  s.actor.send({ type: "message", message: msg("first") });
  s.letPrepare();
  await s.until(() => s.state().includes("running"));
}

describe("the session machine", () => {
  it("a message that came while the turn was being prepared reaches the turn once it has started", async () => {
    const s = session();
    s.actor.send({ type: "message", message: msg("first") });
    await s.until(() => s.state().includes("preparing"));
    s.actor.send({ type: "message", message: msg("second") });
    s.letPrepare();
    await s.until(() => s.state().includes("running"));
    expect(s.injected).toEqual(["second"]);
    // The turn took it in: nothing is left to queue.
    s.settle(["second"]);
    await s.until(() => s.state() === '"idle"');
  });

  it("a /stop that came while the turn was being prepared cancels it once it has started", async () => {
    const s = session();
    s.actor.send({ type: "message", message: msg("first") });
    await s.until(() => s.state().includes("preparing"));
    s.actor.send({ type: "message", message: msg("/stop") });
    s.letPrepare();
    await s.until(() => s.reached.includes("cancel"));
  });

  it("a turn with nothing waiting for it: nothing is injected or cancelled, and its settling ends it", async () => {
    const s = session();
    await running(s);
    // A settled event of another turn is not this one's.
    s.actor.send({ type: "turn.settled", turnId: "other", output: { takenIds: [] } as unknown as TurnOutput });
    expect(s.state()).toContain("running");
    s.settle();
    await s.until(() => s.state() === '"idle"');
    expect([s.injected, s.reached]).toEqual([[], []]);
  });

  it("the turn is invoked with the prepared turn, which the session's context does not hold; its id goes when it ends", async () => {
    const s = session();
    await running(s);
    expect(s.inputs).toEqual([{ input: { turnId: "t1", marker: "the prepared turn" } }]);
    expect(s.actor.getSnapshot().context.turnId).toBe("t1");
    expect(JSON.stringify(s.actor.getSnapshot().context)).not.toContain("the prepared turn");
    s.settle();
    await s.until(() => s.state() === '"idle"');
    expect(s.actor.getSnapshot().context.turnId).toBeNull();
  });

  it("a turn that settles without taking an injected message leaves it for the next turn; one that leaves nothing goes idle", async () => {
    const s = session();
    await running(s);
    s.actor.send({ type: "message", message: msg("second") });
    expect(s.injected).toEqual(["second"]);
    // Settled before its next model call took "second": a second turn answers it.
    s.settle([]);
    await s.until(() => s.inputs.length === 2 && s.state().includes("running"));
    expect(s.actor.getSnapshot().context.current.map((m) => m.id)).toEqual(["second"]);
    expect(s.actor.getSnapshot().context.queue).toEqual([]);
    s.settle();
    await s.until(() => s.state() === '"idle"');
    expect(s.actor.getSnapshot().context).toMatchObject({ queue: [], current: [], resume: null, turnId: null });
  });

  it("a /stop that came while loading, with nothing else to do: answered, and the session is idle", async () => {
    const s = session({ slotFree: true });
    s.actor.send({ type: "message", message: msg("/stop") });
    await s.until(() => s.state() === '"idle"');
    expect(s.stops).toEqual(["Nothing is running."]);
    expect(s.preparedFor).toEqual([]);
    expect(s.actor.getSnapshot().context).toMatchObject({ queue: [], stopMessage: null, stopRequested: false });
  });

  it("loaded with messages: stored ones first, then those that came only as events, each once, a /stop answered and not queued", async () => {
    for (const slotFree of [true, false]) {
      const s = session({ stored: [msg("old"), msg("both")], slotFree });
      s.actor.send({ type: "message", message: msg("both") });
      s.actor.send({ type: "message", message: msg("/stop") });
      s.actor.send({ type: "message", message: msg("new") });
      // A free slot is taken at once; otherwise the session waits for one (the stand-in grants it).
      await s.until(() => s.state().includes("preparing"));
      expect(s.stops).toEqual(["Nothing is running."]);
      expect(s.preparedFor).toEqual(["old"]);
      expect(s.actor.getSnapshot().context.queue.map((m) => m.id)).toEqual(["both", "new"]);
      s.actor.stop();
    }
  });

  it("the message handed in with its start is answered as one sent while loading: stored ones first, each once", async () => {
    for (const slotFree of [true, false]) {
      // Its inbox row is read back too (a session that is not fresh): it is answered once, after older stored messages.
      const s = session({ first: msg("hello"), stored: [msg("old"), msg("hello")], slotFree });
      s.actor.send({ type: "message", message: msg("new") });
      await s.until(() => s.state().includes("preparing"));
      expect(s.preparedFor).toEqual(["old"]);
      expect(s.actor.getSnapshot().context.queue.map((m) => m.id)).toEqual(["hello", "new"]);
      s.actor.stop();
    }
    const fresh = session({ first: msg("hello"), slotFree: true });
    fresh.letPrepare();
    await fresh.until(() => fresh.state().includes("running"));
    expect(fresh.preparedFor).toEqual(["hello"]);
    fresh.settle();
    await fresh.until(() => fresh.state() === '"idle"');
  });

  it("a /stop handed in with the start is answered, not queued for the model", async () => {
    const s = session({ first: msg("/stop"), slotFree: true });
    await s.until(() => s.state() === '"idle"');
    expect(s.stops).toEqual(["Nothing is running."]);
    expect(s.preparedFor).toEqual([]);
  });

  it("a /stop while the turn runs cancels it; once the session moves on, the turn's id is gone", async () => {
    const s = session();
    await running(s);
    s.actor.send({ type: "message", message: msg("/stop") });
    await s.until(() => s.reached.includes("cancel"));
    // The composition settles a cancelled turn as any other; the session is then idle with no turn.
    s.settle();
    await s.until(() => s.state() === '"idle"');
    expect(s.actor.getSnapshot().context.turnId).toBeNull();
  });

  it("/new while the turn runs cancels it and is what the session does next, before messages queued earlier (nanobot's cmd_new)", async () => {
    const s = session();
    await running(s);
    s.actor.send({ type: "message", message: msg("/history") });
    s.actor.send({ type: "message", message: msg("/dream-log") });
    s.actor.send({ type: "message", message: msg("/skill") });
    // Answered at once, as nanobot dispatches them while a turn runs; the turn goes on.
    expect(s.answered).toEqual(["/history (busy)", "/dream-log (busy)", "/skill (busy)"]);
    expect(s.reached).toEqual([]);
    s.actor.send({ type: "message", message: msg("/unknown-command") });
    s.actor.send({ type: "message", message: msg("/new") });
    await s.until(() => s.reached.includes("cancel"));
    s.settle();
    await s.until(() => s.preparedFor.length === 2);
    expect(s.preparedFor).toEqual(["first", "/new"]);
  });

  it("/new while the turn is being prepared cancels it once it has started, then runs", async () => {
    const s = session();
    s.actor.send({ type: "message", message: msg("first") });
    await s.until(() => s.state().includes("preparing"));
    s.actor.send({ type: "message", message: msg("/new") });
    s.letPrepare();
    await s.until(() => s.reached.includes("cancel"));
    s.settle();
    await s.until(() => s.preparedFor.length === 2);
    expect(s.preparedFor).toEqual(["first", "/new"]);
  });

  it("a turn whose checkpoint could not be written ends the session as crashed, saying why (the supervisor restarts it)", async () => {
    const s = session();
    await running(s);
    s.fail("disk full");
    await s.until(() => s.actor.getSnapshot().status === "done");
    expect(s.state()).toBe('"crashed"');
    expect(s.actor.getSnapshot().output).toEqual({ error: "a turn checkpoint could not be written: disk full" });
  });

  it("a session whose inbox could not be read ends as crashed, saying why (the supervisor restarts it)", async () => {
    const s = session({ loadError: "IO error" });
    await s.until(() => s.actor.getSnapshot().status === "done");
    expect(s.state()).toBe('"crashed"');
    expect(s.actor.getSnapshot().output).toEqual({ error: "the session could not be loaded: IO error" });
  });

  it("a failed preparation notifies the message's chat and the session goes on to its next message", async () => {
    const notices: string[] = [];
    const actor = createActor(
      sessionMachine.provide({
        actors: { turn: createMachine({}) as never },
        actions: {
          load: ({ self }) => void queueMicrotask(() => self.send({ type: "session.loaded", loaded: { queue: [msg("a"), msg("b")], resumeTurnId: null } })),
          prepareTurn: ({ self }, { message }) =>
            void queueMicrotask(() =>
              self.send(message?.id === "a" ? { type: "turn.unprepared", error: new Error("no prompt") } : { type: "turn.prepared", prepared: { start: null } }),
            ),
          notify: (_, { message, text }) => void notices.push(`${message.id}: ${text}`),
          takeSlot: () => {},
        },
        guards: { slotFree: () => true },
      }),
      { input: { sessionKey: "test:1", idleMs: 60_000 } },
    ).start();
    for (let i = 0; i < 200 && JSON.stringify(actor.getSnapshot().value) !== '"idle"'; i++) await new Promise((r) => setTimeout(r, 5));
    expect(actor.getSnapshot().value).toBe("idle");
    expect(notices).toEqual(["a: Sorry, something went wrong: no prompt"]);
  });
});
