import { assign, enqueueActions, sendTo, setup, type AnyActorRef, type CallbackActorLogic } from "xstate";
import { notProvided } from "./not-provided.js";
import { MAX_INJECTED_PER_TURN, turnMachine, type TurnActorLogic, type TurnOutput, type TurnStart } from "./turn.machine.js";

/**
 * One conversation (session key). Turns run one at a time; while one runs, new messages are
 * injected into it (up to MAX_INJECTED_PER_TURN, taken at its next model-call boundary) and the rest
 * queue. /stop cancels the running turn; /help and /status answer at once, even while busy. A turn
 * holds a slot of the daemon-wide turn limit: a free one is taken at once (the composition's
 * `takeSlot`, no actor), else the session waits for one (`slot`); `active` gives it back when it
 * exits (`releaseSlot`). Loading (`load`) and preparing a turn (`prepareTurn`) are actions whose
 * result comes back as an event: an invoked actor for each cost more than the work. Idle sessions end (passivate): their state
 * is in LevelDB and the supervisor spawns them again on the next message.
 *
 * The turn is this machine's child (invoked as "turn", stopped with the session). The composition
 * says when the turn's final batch is durable (`turn.settled`, asked for by the `watchTurn` action);
 * a turn whose checkpoint could not be written (`turn.failed`) fails the session, which the
 * supervisor restarts: the turn resumes from its last durable checkpoint, and its user gets one answer.
 */

export interface SessionMessage {
  id: string;
  channel: string;
  chatId: string;
  content: string;
  at: number;
  media?: string[];
}

export interface SessionInput {
  sessionKey: string;
  idleMs: number;
  /** Messages waiting from before a restart (the inbox). */
  queue?: SessionMessage[];
  /**
   * The message that started the session, handed in with its start (the supervisor's route) rather
   * than sent as an event once it runs: taken as a `message` that came while loading would be.
   */
  first?: SessionMessage;
}

export interface SessionContext {
  sessionKey: string;
  idleMs: number;
  queue: SessionMessage[];
  /** An interrupted turn to finish before anything else (recovery after troupe stopped mid-turn). */
  resume: string | null;
  /** The running turn's messages: the one that started it, then those injected, in order. */
  current: SessionMessage[];
  /**
   * The running turn's id (set when it is prepared, cleared when it ends). The prepared turn itself
   * is not kept here: `running` invokes it from the `turn.prepared` event that enters it.
   */
  turnId: string | null;
  /** /stop came before the turn it cancels had started (while loading, waiting or preparing). */
  stopRequested: boolean;
  /** A /stop that came while loading, answered once it is known whether a turn was interrupted. */
  stopMessage: SessionMessage | null;
  /** Why the session ended in `crashed` (its output; the supervisor restarts it). */
  crash: string | null;
}

export interface SessionOutput {
  error: string | null;
}

export interface PrepareTurnInput {
  sessionKey: string;
  /** The message to answer; absent when resuming. */
  message?: SessionMessage;
  resumeTurnId?: string;
}

/** A prepared turn, or nothing to run (a command was answered, the interrupted turn had finished). */
export type PreparedTurn = { start: TurnStart; turnId: string } | { start: null };

/** What a session finds in LevelDB when it starts: its unanswered messages and an interrupted turn. */
export interface LoadedSession {
  queue: SessionMessage[];
  resumeTurnId: string | null;
}

export type SessionEvent =
  | { type: "message"; message: SessionMessage }
  | { type: "slot.granted" }
  /** Raised when the turn has started: a /stop or messages that came while it was prepared reach it. */
  | { type: "turn.started" }
  /** What the session found in LevelDB (sent by the composition once `load` has read it). */
  | { type: "session.loaded"; loaded: LoadedSession }
  /** Its inbox or interrupted turn could not be read: the session ends as crashed and the supervisor restarts it. */
  | { type: "session.loadFailed"; error: string }
  /** The turn for the message being prepared is built, or there is nothing to run (sent by the composition after `prepareTurn`). */
  | { type: "turn.prepared"; prepared: PreparedTurn }
  /** Preparing the turn failed (sent by the composition after `prepareTurn`). */
  | { type: "turn.unprepared"; error: unknown }
  /** The turn's final batch (reply, inbox removal) is durable and its reply announced (sent by the composition, see `watchTurn`). */
  | { type: "turn.settled"; turnId: string; output: TurnOutput }
  /** One of the turn's checkpoints could not be written (sent by the composition). */
  | { type: "turn.failed"; turnId: string; error: string };

export interface SlotInput {
  sessionKey: string;
  /** The session actor that holds the slot once it is granted. */
  owner: AnyActorRef;
}

export interface NoticeParams {
  sessionKey: string;
  message: SessionMessage;
  text: string;
}

const word = (m: SessionMessage) => m.content.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
/**
 * Commands answered at once, even while a turn runs, as nanobot dispatches them (/restart: the
 * running turn resumes after it). /new is not among them: it cancels the running turn and goes first
 * (`isNew`); /stop has its own way.
 */
export const IMMEDIATE_COMMANDS = ["/help", "/status", "/restart", "/history", "/skill", "/dream", "/dream-log", "/dream-restore", "/dream-prompt"];
const isCommand = (m: SessionMessage) => m.content.trim().startsWith("/");
/**
 * The turn `running` invokes, from the event that enters it: only `turn.prepared` with a turn to
 * start does. (Kept out of the context, the prepared turn, system prompt and history, is not copied
 * by every later assign nor held by the session's snapshot once the turn has started.)
 */
const preparedTurn = (event: SessionEvent): TurnStart => {
  if (event.type === "turn.prepared" && event.prepared.start) return event.prepared.start;
  throw new Error(`the session entered running on ${event.type}, not on a prepared turn`);
};
/** A message already queued or in the running turn (the inbox and the live event can both bring it). */
const known = (context: SessionContext, id: string) => context.queue.some((m) => m.id === id) || context.current.some((m) => m.id === id);

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionInput,
    output: {} as SessionOutput,
  },
  actors: {
    /**
     * Waits for a slot of agents.defaults.maxConcurrentTurns when none was free; sends slot.granted
     * once `owner` holds it (until `releaseSlot`). Stopped before that, it gives up its place.
     */
    slot: notProvided<CallbackActorLogic<SessionEvent, SlotInput>>("session", "slot", "callback"),
    /** The turn machine, checkpointed at every transition (supplied by the composition). */
    turn: turnMachine as unknown as TurnActorLogic,
  },
  actions: {
    /**
     * Reads the session's inbox and interrupted turn, then sends `session.loaded` (or
     * `session.loadFailed`): one event, not an actor per session start. Supplied by the composition.
     */
    load: (_, _params: { sessionKey: string }) => {},
    /**
     * Answers a queued command (/new), or builds the turn for a message, or loads the interrupted
     * turn, then sends `turn.prepared` (or `turn.unprepared`): one event, not an actor per turn.
     * Supplied by the composition.
     */
    prepareTurn: (_, _params: PrepareTurnInput) => {},
    /** Answers /help, /status or /restart. Supplied by the composition. */
    answerCommand: (_, _params: { sessionKey: string; message: SessionMessage; busy: boolean }) => {},
    /** Sends a fixed text to the message's chat. Supplied by the composition. */
    notify: (_, _params: NoticeParams) => {},
    /** /stop: cancels the session's subagents and answers with `text` (or, when idle, what was cancelled). Supplied by the composition. */
    stop: (_, _params: NoticeParams & { idle: boolean }) => {},
    /** Drops messages that will not be answered (/stop cleared them) from the inbox. Supplied by the composition. */
    discard: (_, _params: { sessionKey: string; ids: string[] }) => {},
    /**
     * Sends the session `turn.settled` once the turn's final batch is durable (its reply announced),
     * or `turn.failed`: one event, not an actor per turn. Supplied by the composition.
     */
    watchTurn: (_, _params: { sessionKey: string; turnId: string }) => {},
    /** Takes a free turn slot for this session (after `slotFree`). Supplied by the composition. */
    takeSlot: () => {},
    /** Gives back the turn slot this session holds, if any. Supplied by the composition. */
    releaseSlot: () => {},
    /** Hands a message to the running turn (as the model will see it, images included). Supplied by the composition. */
    inject: (_, _params: { message: SessionMessage }) => {},
    /** What the session found in LevelDB: its queue (stored messages first, then those that came only as events) and its interrupted turn; a /stop that came while loading is answered. */
    applyLoaded: enqueueActions(({ context: c, event: e, enqueue }) => {
      const context = c as SessionContext;
      const event = e as SessionEvent;
      if (event.type !== "session.loaded") return;
      const loaded = event.loaded;
      const resume = loaded.resumeTurnId;
      // Stored messages first (older), then any that came only as events; a /stop is not a message for the model.
      const stop = context.stopMessage;
      // Nothing stored and no /stop (a fresh session, its first message handed in with its start): nothing changes, no context copy.
      if (!stop && resume === null && loaded.queue.length === 0 && !context.stopRequested) return;
      const stored = new Set(loaded.queue.map((q) => q.id));
      const queue = [...loaded.queue, ...context.queue.filter((m) => !stored.has(m.id))].filter((m) => m.id !== stop?.id);
      enqueue.assign({ resume, queue, stopRequested: Boolean(stop && resume), stopMessage: null });
      if (stop) {
        const text = resume ? "Stopping the interrupted turn." : "Nothing is running.";
        enqueue({ type: "stop", params: { sessionKey: context.sessionKey, message: stop, text, idle: !resume } } as never);
      }
    }) as never, // (typed by hand: an enqueueActions among setup's own actions does not type-check against their params)
    enqueue: assign({
      queue: ({ context, event }) =>
        event.type === "message" && !known(context, event.message.id) ? [...context.queue, event.message] : context.queue,
    }),
    /** /new goes before what was queued (nanobot's cmd_new runs at once, cancelling the running turn first). */
    enqueueFirst: assign({
      queue: ({ context, event }) =>
        event.type === "message" && !known(context, event.message.id) ? [event.message, ...context.queue] : context.queue,
    }),
  },
  guards: {
    isStop: ({ event }) => event.type === "message" && word(event.message) === "/stop",
    isImmediate: ({ event }) => event.type === "message" && IMMEDIATE_COMMANDS.includes(word(event.message)),
    isNew: ({ event }) => event.type === "message" && word(event.message) === "/new",
    canInject: ({ context, event }) =>
      event.type === "message" &&
      !isCommand(event.message) &&
      context.current.length > 0 &&
      !isCommand(context.current[0]!) &&
      context.current.length - 1 < MAX_INJECTED_PER_TURN,
    /** Loaded with nothing to do: no interrupted turn, no message but a /stop (as `noWork` after `applyLoaded`). */
    loadedNoWork: ({ context, event }) => {
      if (event.type !== "session.loaded" || event.loaded.resumeTurnId !== null) return false;
      const stop = context.stopMessage?.id;
      return event.loaded.queue.every((m) => m.id === stop) && context.queue.every((m) => m.id === stop);
    },
    /** Nothing queued and no interrupted turn to resume. */
    noWork: ({ context }) => context.queue.length === 0 && context.resume === null,
    /** An event about the running turn (not one that ended before). */
    ofThisTurn: ({ context, event }) => (event.type === "turn.settled" || event.type === "turn.failed") && event.turnId === context.turnId,
    /** The running turn settled and left nothing to do: nothing queued, every message injected into it taken. */
    settledIdle: ({ context, event }) =>
      event.type === "turn.settled" &&
      event.turnId === context.turnId &&
      context.queue.length === 0 &&
      context.current.every((m, i) => i === 0 || event.output.takenIds.includes(m.id)),
    /** The store is failing (supplied by the composition). */
    storeDown: () => false,
    /** A turn slot is free now, nobody waiting for one (supplied by the composition; without it a session always waits for `slot`). */
    slotFree: () => false,
  },
  delays: {
    idle: ({ context }) => context.idleMs,
  },
}).createMachine({
  id: "session",
  context: ({ input }) => {
    // The first message as `message` in `loading` takes it: a /stop is remembered, anything else queued.
    const first = input.first;
    const stop = first && word(first) === "/stop" ? first : null;
    const queue = input.queue ?? [];
    return {
      sessionKey: input.sessionKey,
      idleMs: input.idleMs,
      queue: first && !stop && !queue.some((m) => m.id === first.id) ? [...queue, first] : queue,
      current: [],
      resume: null,
      turnId: null,
      stopRequested: false,
      stopMessage: stop,
      crash: null,
    };
  },
  output: ({ context }) => ({ error: context.crash }),
  initial: "loading",
  states: {
    loading: {
      // A failed read ends the session as crashed: the supervisor restarts it with backoff.
      entry: { type: "load", params: ({ context }) => ({ sessionKey: context.sessionKey }) },
      on: {
        // Where `next` would go, decided here (one microstep less per session start): idle with nothing
        // to do, else a turn, at once with a free slot or after waiting for one.
        "session.loaded": [
          { guard: "loadedNoWork", target: "idle", actions: "applyLoaded" },
          { guard: "slotFree", target: "active.preparing", actions: ["applyLoaded", "takeSlot"] },
          { target: "active.waiting", actions: "applyLoaded" },
        ],
        "session.loadFailed": {
          target: "crashed",
          actions: assign({ crash: ({ event }) => `the session could not be loaded: ${event.error}` }),
        },
        message: [{ guard: "isStop", actions: assign({ stopMessage: ({ event }) => event.message }) }, { actions: "enqueue" }],
      },
    },
    idle: {
      after: { idle: "passivated" },
      on: {
        message: [
          { guard: "isStop", actions: { type: "stop", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, text: "Nothing is running.", idle: true }) } },
          { guard: "isImmediate", actions: { type: "answerCommand", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, busy: false }) } },
          { actions: "enqueue", target: "next" },
        ],
      },
    },
    active: {
      // The slot is held for the whole of one turn; between turns it is given back, so sessions take turns fairly.
      // (An actor stopped while active runs no exit action: its host gives the slot back then.)
      exit: "releaseSlot",
      // Entered through `next`, straight into `preparing` (a free slot taken) or `waiting`.
      initial: "waiting",
      on: {
        message: [
          {
            guard: "isStop",
            target: "next",
            actions: [
              { type: "stop", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, text: "Stopped.", idle: false }) },
              { type: "discard", params: ({ context }) => ({ sessionKey: context.sessionKey, ids: context.queue.map((m) => m.id) }) },
              // An interrupted turn waiting to resume is cancelled as soon as it is back.
              assign({ queue: [], current: [], turnId: null, stopRequested: ({ context }) => context.resume !== null }),
            ],
          },
          { guard: "isImmediate", actions: { type: "answerCommand", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, busy: true }) } },
          // Waiting for a slot: nothing runs yet; /new goes first.
          { guard: "isNew", actions: "enqueueFirst" },
          { actions: "enqueue" },
        ],
      },
      states: {
        // No slot was free when the session had work (see `next`).
        waiting: {
          invoke: { src: "slot", input: ({ context, self }) => ({ sessionKey: context.sessionKey, owner: self }) },
          on: { "slot.granted": "preparing" },
        },
        preparing: {
          // A resumed turn runs first and takes no queued message.
          entry: [
            assign(({ context }) => (context.resume ? { current: [] } : { current: context.queue.slice(0, 1), queue: context.queue.slice(1) })),
            {
              type: "prepareTurn",
              params: ({ context }) =>
                context.resume ? { sessionKey: context.sessionKey, resumeTurnId: context.resume } : { sessionKey: context.sessionKey, message: context.current[0]! },
            },
          ],
          on: {
            "turn.prepared": [
              { guard: ({ event }) => event.prepared.start === null, target: "#session.next", actions: assign({ resume: null, stopRequested: false, current: [] }) },
              {
                target: "running",
                actions: assign({ turnId: ({ event }) => (event.prepared.start ? event.prepared.turnId : null) }),
              },
            ],
            "turn.unprepared": [
              // The store failed: the message stays in the inbox; the session is parked and started again once the store recovers.
              {
                guard: "storeDown",
                target: "#session.crashed",
                actions: assign({ crash: ({ event }) => `the store failed: ${event.error instanceof Error ? event.error.message : String(event.error)}` }),
              },
              {
                target: "#session.next",
                actions: enqueueActions(({ context, event, enqueue }) => {
                  const message = context.current[0];
                  enqueue.assign({ resume: null, stopRequested: false, current: [] });
                  const why = event.error instanceof Error ? event.error.message : String(event.error);
                  if (message) enqueue({ type: "notify", params: { sessionKey: context.sessionKey, message, text: `Sorry, something went wrong: ${why}` } });
                }),
              },
            ],
            message: [
              {
                guard: "isStop",
                actions: [
                  assign({ stopRequested: true }),
                  { type: "stop", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, text: "Stopping the running turn.", idle: false }) },
                ],
              },
              // The turn being prepared is cancelled as soon as it has started; /new runs next.
              { guard: "isNew", actions: [assign({ stopRequested: true }), "enqueueFirst"] },
              // Handed to the turn as soon as it has started. (Anything else: as in `active`.)
              { guard: "canInject", actions: assign({ current: ({ context, event }) => [...context.current, event.message] }) },
            ],
          },
        },
        running: {
          // Raised, so what came while the turn was being prepared reaches it once it exists (entry runs
          // before the invocation); only when something came (most turns: nothing, and no extra step).
          entry: [
            enqueueActions(({ context, enqueue }) => {
              if (context.current.length > 1 || context.stopRequested) enqueue.raise({ type: "turn.started" });
            }),
            { type: "watchTurn", params: ({ context }) => ({ sessionKey: context.sessionKey, turnId: context.turnId! }) },
          ],
          // No exit action: each way out clears `turnId` in the assign it makes anyway (one context copy less a turn).
          invoke: { id: "turn", src: "turn", input: ({ event }) => preparedTurn(event) },
          on: {
            "turn.settled": [
              // Most turns: nothing left to do, so straight to idle (what `next` would decide, one microstep less).
              { guard: "settledIdle", target: "#session.idle", actions: assign({ current: [], resume: null, turnId: null }) },
              {
                guard: "ofThisTurn",
                target: "#session.next",
                // Injected messages the turn never took go back to the head of the queue.
                actions: assign(({ context, event }) => ({
                  queue: [...context.current.slice(1).filter((m) => !event.output.takenIds.includes(m.id)), ...context.queue],
                  current: [],
                  resume: null,
                  turnId: null,
                })),
              },
            ],
            // A checkpoint that could not be written ends the session (its turn stopped with it) as
            // crashed: the supervisor restarts it, and the turn resumes from its last durable checkpoint.
            "turn.failed": {
              guard: "ofThisTurn",
              target: "#session.crashed",
              actions: assign({ turnId: null, crash: ({ event }) => `a turn checkpoint could not be written: ${event.error}` }),
            },
            "turn.started": {
              actions: enqueueActions(({ context, enqueue }) => {
                for (const message of context.current.slice(1)) enqueue({ type: "inject", params: { message } });
                if (!context.stopRequested) return;
                enqueue.assign({ stopRequested: false });
                enqueue.sendTo("turn", { type: "cancel" });
              }),
            },
            message: [
              {
                guard: "isStop",
                actions: [
                  sendTo("turn", { type: "cancel" }),
                  { type: "stop", params: ({ context, event }) => ({ sessionKey: context.sessionKey, message: event.message, text: "Stopping the running turn.", idle: false }) },
                ],
              },
              // The running turn is cancelled; once it has settled, /new is the session's next step.
              { guard: "isNew", actions: [sendTo("turn", { type: "cancel" }), "enqueueFirst"] },
              {
                guard: "canInject",
                actions: enqueueActions(({ enqueue, event }) => {
                  if (event.type !== "message") return;
                  enqueue.assign({ current: ({ context }) => [...context.current, event.message] });
                  enqueue({ type: "inject", params: { message: event.message } });
                }),
              },
            ],
          },
        },
      },
    },
    next: {
      // Every way in leaves `current` empty (no assign here: each copies the whole context).
      // A free slot is taken at once, with no actor and no event; only a session that has to wait invokes `slot`.
      always: [{ guard: "noWork", target: "idle" }, { guard: "slotFree", target: "active.preparing", actions: "takeSlot" }, { target: "active.waiting" }],
    },
    passivated: { type: "final" },
    crashed: { type: "final" },
  },
});
