import { and, assign, setup, type ActorLogic, type PromiseActorLogic, type SnapshotFrom } from "xstate";
import { notProvided } from "./not-provided.js";
import {
  addUsage,
  assistantMessage,
  ZERO_USAGE,
  type ChatMessage,
  type ModelResponse,
  type ParsedToolCall,
  type Usage,
} from "../src/providers/messages.js";
import type { StoreOp } from "../src/store/store.js";
import type { TurnRecord } from "../src/store/turns.js";
import { TURN_FINAL_STATES } from "./turn-states.js";
import { EMPTY_FINAL_RESPONSE_MESSAGE, isEmptyAnswer, lengthRecoveryPrompt, MAX_EMPTY_ANSWERS, MAX_LENGTH_CONTINUATIONS } from "../src/context/loop-texts.js";

/**
 * One agent turn, from a user message to a reply (DESIGN.md, "The turn machine"). The state
 * names are the spec. Effects are invoked actors named by key; the composition supplies them with
 * machine.provide(). Every state's entry bumps `seq`; each effect waits until the checkpoint with
 * its seq is durable before it starts, so no effect runs ahead of its checkpoint.
 */

export interface TurnInput {
  turnId: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  /** System prompt, history and the new user message (last). */
  messages: ChatMessage[];
  maxIterations: number;
  /** The inbox message that started the turn (it leaves the inbox with the turn's final checkpoint). */
  messageId?: string;
  /**
   * Where `messages[1 .. 1 + count]` (the history) come from: the session's stored messages of
   * `epoch` with seq in [fromSeq, toSeq), those the model is shown. The stored input refers to them
   * instead of holding a copy, so a turn's first checkpoint does not grow with the session.
   */
  history?: { epoch: number; fromSeq: number; toSeq: number; count: number };
  /** The system prompt's chunks as stored by content (src/store/blobs.ts); the stored input leaves its text out. */
  systemBlobs?: string[];
}

export interface CallModelInput {
  turnId: string;
  sessionKey: string;
  seq: number;
  messages: ChatMessage[];
  /**
   * A request without tools, its prompt appended (not stored): "answer" after repeated empty answers,
   * "budget" once the turn's tool iterations are used up.
   */
  finalize?: "answer" | "budget";
  /** How many of `messages` this turn added (its tool results, continuations…): the rest is history. */
  turnMessages?: number;
  /** For hooks: the chat, and which model call of the turn this is. */
  channel?: string;
  chatId?: string;
  iteration?: number;
}

/** The final answer, checkpointed as the model gave it, for the hooks' finalizeContent. */
export interface FinalizeInput {
  turnId: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  seq: number;
  iteration: number;
  messages: ChatMessage[];
  response: ModelResponse;
}

export interface RunToolsInput {
  turnId: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  seq: number;
  /** Which model response of the turn asked for these calls: with each call's position, its key in the journal. */
  iteration: number;
  calls: ParsedToolCall[];
}

export type ToolResultMessage = Extract<ChatMessage, { role: "tool" }>;

export interface TurnContext {
  turnId: string;
  sessionKey: string;
  channel: string;
  chatId: string;
  messages: ChatMessage[];
  /** Index of the first message this turn added after its user message. */
  firstNewIndex: number;
  iteration: number;
  maxIterations: number;
  pendingToolCalls: ParsedToolCall[];
  /** Messages injected and not yet taken; the turn takes them at its next model-call boundary. */
  injected: InjectedMessage[];
  injectedTaken: number;
  /** Inbox ids of the injected messages taken in. */
  takenIds: string[];
  usage: Usage;
  /** Which models answered ("<provider>/<model>"), in order of first use: a fallback model shows here. Absent in older records. */
  models?: string[];
  reply: string | null;
  error: string | null;
  seq: number;
  /** Empty answers in a row (no text, no tool calls); absent in records written before it existed. */
  emptyAnswers?: number;
  /** The parts of an answer cut off at the token limit so far, each followed in `messages` by the prompt to go on. */
  continuation?: string[];
  /** The final response awaiting the hooks' finalizeContent (state `finalizing_content`). */
  draft?: ModelResponse | null;
  /** The hooks' finalizeContent ran on the reply: a resumed turn does not run it again. */
  finalized?: boolean;
}

export interface InjectedMessage {
  /** The user message as the model sees it (text, or text and image parts). */
  content: Extract<ChatMessage, { role: "user" }>["content"];
  messageId?: string;
}

export type TurnEvent =
  | { type: "cancel" }
  | ({ type: "inject" } & InjectedMessage)
  /** The checkpoint of `tools_completed` is as durable as the next model call needs: the composition sends it (an event, not an invoked actor per round). */
  | { type: "checkpointed" };

/** How a turn actor starts: fresh from its input (with ops for its first checkpoint), or restored from its last checkpoint. */
export type TurnStart = { input: TurnInput; initialOps?: StoreOp[] } | { record: TurnRecord };

export interface TurnOutput {
  reply: string;
  /** Messages the turn added after the user message, in order. */
  newMessages: ChatMessage[];
  usage: Usage;
  /** Which models answered the turn's calls, in order of first use. */
  models: string[];
  iteration: number;
  error: string | null;
  /** How many injected messages the turn took in; the session queues the rest for the next turn. */
  injectedTaken: number;
  /** Inbox ids of the injected messages taken in. */
  takenIds: string[];
  /**
   * The `message` tool already wrote to this turn's chat, so the reply is not sent again (nanobot's
   * _sent_in_turn); it is sent anyway when the turn took in injected messages (unless it ended
   * empty) or failed.
   */
  replySent?: boolean;
}

/** How many user messages a running turn takes in; the rest wait for the next turn. */
export const MAX_INJECTED_PER_TURN = 3;

/** The models that answered so far, with this response's one added if it is new. */
const answeredBy = (models: string[] | undefined, output: ModelResponse): string[] =>
  !output.model || models?.includes(output.model) ? (models ?? []) : [...(models ?? []), output.model];

const errorText = ({ event }: { event: { error: unknown } }) => (event.error instanceof Error ? event.error.message : String(event.error));

/**
 * A final state's reply, appended as the assistant's last message. Tool calls still open (the turn
 * ended while they ran) get a closing result first, so the stored history stays well formed.
 */
const endWith = (context: TurnContext, reply: string, openCallResult: string) => ({
  reply,
  pendingToolCalls: [],
  messages: [
    ...context.messages,
    ...context.pendingToolCalls.map((c): ChatMessage => ({ role: "tool", tool_call_id: c.id, name: c.name, content: openCallResult })),
    { role: "assistant" as const, content: reply },
  ],
});

/**
 * The turn's final answer: the parts of a cut-off answer and this last piece joined into one
 * assistant message, replacing the chain of parts and continuation prompts (the session keeps
 * the answer as the user got it); an empty answer becomes nanobot's fallback text.
 */
/**
 * The messages with a response that calls tools. After a cut-off answer it replaces the parts and
 * their prompts to go on: one assistant message carrying the joined text and the calls.
 */
function withToolCalls(context: TurnContext, response: ModelResponse) {
  const parts = context.continuation ?? [];
  if (!parts.length) return [...context.messages, assistantMessage(response)];
  const kept = context.messages.slice(0, context.messages.length - 2 * parts.length);
  return [...kept, assistantMessage({ ...response, content: [...parts, response.content].join("") })];
}

function answer(context: TurnContext, response: ModelResponse) {
  const parts = context.continuation ?? [];
  const text = parts.length ? [...parts, response.content].join("").trim() : response.content;
  const reply = text.trim() ? text : EMPTY_FINAL_RESPONSE_MESSAGE;
  const kept = context.messages.slice(0, context.messages.length - 2 * parts.length);
  const last = assistantMessage({ ...response, toolCalls: [] });
  return {
    messages: [...kept, { ...last, content: reply }],
    reply,
    continuation: [],
    usage: addUsage(context.usage, response.usage),
    models: answeredBy(context.models, response),
  };
}

/** Which turn, chat and step an invoked actor works for (the chat and iteration are for the hooks). */
const turnFields = (context: TurnContext) => ({
  turnId: context.turnId,
  sessionKey: context.sessionKey,
  channel: context.channel,
  chatId: context.chatId,
  seq: context.seq,
  iteration: context.iteration,
});

/** What a model call of the turn is given. */
const modelCall = (context: TurnContext): CallModelInput => ({
  ...turnFields(context),
  messages: context.messages,
  turnMessages: context.messages.length - context.firstNewIndex,
});

/** The answer as assembled (continuations joined, the fallback for none), held for the hooks' finalizeContent. */
const withDraft = (assembled: ReturnType<typeof answer>, response: ModelResponse) => ({ ...assembled, draft: { ...response, content: assembled.reply, toolCalls: [] } });

/** A cut-off answer so far, and the prompt to continue it from where it stopped. */
function continueAnswer(context: TurnContext, response: ModelResponse) {
  return {
    messages: [
      ...context.messages,
      assistantMessage({ ...response, toolCalls: [] }),
      { role: "user" as const, content: lengthRecoveryPrompt(response.content) },
    ],
    continuation: [...(context.continuation ?? []), response.content],
    usage: addUsage(context.usage, response.usage),
    models: answeredBy(context.models, response),
  };
}

const emptyAnswer = (context: TurnContext, response: ModelResponse) => ({
  emptyAnswers: (context.emptyAnswers ?? 0) + 1,
  usage: addUsage(context.usage, response.usage),
  models: answeredBy(context.models, response),
});

/** Whether the `message` tool wrote to the turn's own chat among the messages the turn added. */
export function messagedOwnChat(context: Pick<TurnContext, "messages" | "firstNewIndex" | "channel" | "chatId">): boolean {
  const added = context.messages.slice(context.firstNewIndex);
  const results = new Map(added.flatMap((m) => (m.role === "tool" ? [[m.tool_call_id, m.content] as const] : [])));
  return added.some(
    (m) =>
      m.role === "assistant" &&
      (m.tool_calls ?? []).some((call) => {
        if (call.function.name !== "message") return false;
        const result = results.get(call.id);
        if (result === undefined || /^error/i.test(result)) return false;
        let args: { channel?: unknown; chat_id?: unknown };
        try {
          args = JSON.parse(call.function.arguments) as typeof args;
        } catch {
          return false;
        }
        const channel = typeof args.channel === "string" && args.channel ? args.channel : context.channel;
        const chatId = typeof args.chat_id === "string" && args.chat_id ? args.chat_id : channel === context.channel ? context.chatId : undefined;
        return channel === context.channel && chatId === context.chatId;
      }),
  );
}

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as TurnInput,
    output: {} as TurnOutput,
  },
  actors: {
    callModel: notProvided<PromiseActorLogic<ModelResponse, CallModelInput>>("turn", "callModel"),
    runTools: notProvided<PromiseActorLogic<ToolResultMessage[], RunToolsInput>>("turn", "runTools"),
    finalizeContent: notProvided<PromiseActorLogic<string, FinalizeInput>>("turn", "finalizeContent"),
  },
  actions: {
    bumpSeq: assign({ seq: ({ context }) => context.seq + 1 }),
  },
  guards: {
    hasToolCalls: (_, output: ModelResponse) => output.toolCalls.length > 0,
    /** An empty answer to ask for again, with tools (nanobot: the first of two). */
    retryEmpty: ({ context }, output: ModelResponse) => isEmptyAnswer(output) && (context.emptyAnswers ?? 0) + 1 < MAX_EMPTY_ANSWERS,
    /** Empty again: one request without tools follows. */
    emptyAgain: (_, output: ModelResponse) => isEmptyAnswer(output),
    /** Cut off at the token limit, with continuations left. */
    cutOff: ({ context }, output: ModelResponse) => output.finishReason === "length" && (context.continuation ?? []).length < MAX_LENGTH_CONTINUATIONS,
    iterationLimitReached: ({ context }) => context.iteration >= context.maxIterations,
    /** A summary at the iteration limit (the model call's done event) that can be the reply: text, no tool calls, no error. */
    usableSummary: ({ event }) => {
      const output = (event as unknown as { output: ModelResponse }).output;
      return output.toolCalls.length === 0 && output.finishReason !== "error" && output.content.trim() !== "";
    },
    /** Hooks are loaded: a final answer goes through `finalizing_content` (the composition provides this). */
    hasHooks: () => false,
  },
}).createMachine({
  id: "turn",
  initial: "awaiting_model",
  context: ({ input }) => ({
    turnId: input.turnId,
    sessionKey: input.sessionKey,
    channel: input.channel,
    chatId: input.chatId,
    messages: input.messages,
    firstNewIndex: input.messages.length,
    iteration: 0,
    maxIterations: input.maxIterations,
    pendingToolCalls: [],
    injected: [],
    injectedTaken: 0,
    takenIds: [],
    usage: ZERO_USAGE,
    models: [],
    reply: null,
    error: null,
    seq: 0,
    emptyAnswers: 0,
    continuation: [],
  }),
  on: {
    inject: {
      guard: ({ context }) => context.injectedTaken + context.injected.length < MAX_INJECTED_PER_TURN,
      actions: assign({ injected: ({ context, event }) => [...context.injected, { content: event.content, messageId: event.messageId }] }),
    },
  },
  states: {
    awaiting_model: {
      entry: "bumpSeq",
      invoke: {
        src: "callModel",
        input: ({ context }) => modelCall(context),
        onDone: [
          {
            guard: { type: "hasToolCalls", params: ({ event }) => event.output },
            target: "awaiting_tools",
            actions: assign(({ context, event }) => ({
              messages: withToolCalls(context, event.output),
              pendingToolCalls: event.output.toolCalls,
              iteration: context.iteration + 1,
              usage: addUsage(context.usage, event.output.usage),
              models: answeredBy(context.models, event.output),
              // Tool work starts a new answer.
              emptyAnswers: 0,
              continuation: [],
            })),
          },
          // Each retry and continuation is a transition of its own, checkpointed before its model call.
          {
            guard: { type: "retryEmpty", params: ({ event }) => event.output },
            target: "awaiting_model",
            reenter: true,
            actions: assign(({ context, event }) => emptyAnswer(context, event.output)),
          },
          {
            guard: { type: "emptyAgain", params: ({ event }) => event.output },
            target: "finalizing",
            actions: assign(({ context, event }) => emptyAnswer(context, event.output)),
          },
          {
            guard: { type: "cutOff", params: ({ event }) => event.output },
            target: "awaiting_model",
            reenter: true,
            actions: assign(({ context, event }) => continueAnswer(context, event.output)),
          },
          {
            guard: "hasHooks",
            target: "finalizing_content",
            actions: assign(({ context, event }) => withDraft(answer(context, event.output), event.output)),
          },
          {
            target: "responded",
            actions: assign(({ context, event }) => answer(context, event.output)),
          },
        ],
        onError: {
          target: "failed",
          actions: assign({ error: errorText }),
        },
      },
      on: { cancel: "cancelled" },
    },
    // After repeated empty answers: one request without tools, the finalization prompt appended.
    finalizing: {
      entry: "bumpSeq",
      invoke: {
        src: "callModel",
        input: ({ context }) => ({ ...modelCall(context), finalize: "answer" as const }),
        onDone: [
          {
            guard: { type: "cutOff", params: ({ event }) => event.output },
            target: "awaiting_model",
            actions: assign(({ context, event }) => continueAnswer(context, event.output)),
          },
          // Tool calls it makes anyway are not run: it was asked for the answer.
          {
            guard: "hasHooks",
            target: "finalizing_content",
            actions: assign(({ context, event }) => withDraft(answer(context, { ...event.output, toolCalls: [] }), event.output)),
          },
          { target: "responded", actions: assign(({ context, event }) => answer(context, { ...event.output, toolCalls: [] })) },
        ],
        onError: {
          target: "failed",
          actions: assign({ error: errorText }),
        },
      },
      on: { cancel: "cancelled" },
    },
    awaiting_tools: {
      entry: "bumpSeq",
      invoke: {
        src: "runTools",
        input: ({ context }) => ({ ...turnFields(context), calls: context.pendingToolCalls }),
        onDone: {
          target: "tools_completed",
          actions: assign(({ context, event }) => ({ messages: [...context.messages, ...event.output], pendingToolCalls: [] })),
        },
        onError: {
          target: "failed",
          actions: assign({ error: errorText }),
        },
      },
      on: { cancel: "cancelled" },
    },
    tools_completed: {
      // Results are in; user messages that arrived meanwhile join here, at the model-call boundary.
      // One assign with the seq bump (each assign copies the whole context); nothing injected (most
      // turns): the message list is not copied.
      entry: assign(({ context }) =>
        context.injected.length === 0
          ? { seq: context.seq + 1 }
          : {
              seq: context.seq + 1,
              messages: [...context.messages, ...context.injected.map(({ content }): ChatMessage => ({ role: "user", content }))],
              injectedTaken: context.injectedTaken + context.injected.length,
              takenIds: [...context.takenIds, ...context.injected.flatMap((m) => (m.messageId ? [m.messageId] : []))],
              injected: [],
            },
      ),
      // Waits for the composition's `checkpointed` (its checkpoint rides in the next one's batch).
      on: {
        cancel: "cancelled",
        checkpointed: [{ guard: "iterationLimitReached", target: "finalizing_after_limit" }, { target: "awaiting_model" }],
      },
    },
    // The tool iterations are used up: one request without tools asks for a summary of where the task
    // stands (nanobot's finalization after max iterations). A usable answer is the reply; one that
    // calls tools, is blank, errs or fails gets max_iterations' fixed text. The turn ends in
    // max_iterations either way, but with hooks: a usable answer goes through finalizing_content, as
    // every final answer does, and ends in responded.
    finalizing_after_limit: {
      entry: "bumpSeq",
      invoke: {
        src: "callModel",
        input: ({ context }) => ({ ...modelCall(context), finalize: "budget" as const }),
        onDone: [
          {
            guard: and(["usableSummary", "hasHooks"]),
            target: "finalizing_content",
            actions: assign(({ context, event }) => withDraft(answer(context, event.output), event.output)),
          },
          {
            guard: "usableSummary",
            target: "max_iterations",
            actions: assign(({ context, event }) => answer(context, event.output)),
          },
          {
            target: "max_iterations",
            actions: assign(({ context, event }) => ({ usage: addUsage(context.usage, event.output.usage), models: answeredBy(context.models, event.output) })),
          },
        ],
        onError: { target: "max_iterations" },
      },
      on: { cancel: "cancelled" },
    },
    finalizing_content: {
      // The answer is checkpointed as the model gave it before the hooks see it; their result is
      // journalled, so a turn resumed here does not run them on the same content twice.
      entry: "bumpSeq",
      invoke: {
        src: "finalizeContent",
        input: ({ context }) => ({
          ...turnFields(context),
          // What came before the answer (the answer itself is the draft).
          messages: context.messages.slice(0, -1),
          response: context.draft!,
        }),
        onDone: {
          target: "responded",
          actions: assign(({ context, event }) => {
            const reply = event.output.trim() ? event.output : EMPTY_FINAL_RESPONSE_MESSAGE;
            return { messages: [...context.messages.slice(0, -1), { ...context.messages.at(-1)!, content: reply }], reply, draft: null, finalized: true };
          }),
        },
        onError: { target: "failed", actions: assign({ error: errorText }) },
      },
      on: { cancel: "cancelled" },
    },
    responded: { type: "final", entry: "bumpSeq" },
    failed: {
      type: "final",
      entry: [
        "bumpSeq",
        assign(({ context }) =>
          endWith(context, `Sorry, I could not finish this: ${context.error ?? "unknown error"}`, "Error: the turn failed before this call finished; its effect is unknown."),
        ),
      ],
    },
    cancelled: {
      type: "final",
      entry: ["bumpSeq", assign(({ context }) => endWith(context, "Stopped.", "Cancelled by the user; this call may not have run."))],
    },
    max_iterations: {
      type: "final",
      entry: [
        "bumpSeq",
        // The fixed text, unless the summary asked for at the limit is the reply already.
        assign(({ context }) =>
          context.reply !== null ? {} : endWith(
            context,
            `I reached the maximum number of tool iterations (${context.maxIterations}) without finishing. Tell me to continue, or narrow the task.`,
            "Error: the turn stopped before this call ran.",
          ),
        ),
      ],
    },
  },
  output: ({ context }) => ({
    reply: context.reply ?? "",
    newMessages: context.messages.slice(context.firstNewIndex),
    usage: context.usage,
    models: context.models ?? [],
    iteration: context.iteration,
    error: context.error,
    injectedTaken: context.injectedTaken,
    takenIds: context.takenIds,
    // A failure is reported all the same.
    replySent: context.error === null && messagedOwnChat(context) && (context.injectedTaken === 0 || context.reply === EMPTY_FINAL_RESPONSE_MESSAGE),
  }),
});

export { TURN_FINAL_STATES };

export type TurnSnapshot = SnapshotFrom<typeof turnMachine>;
/** The turn machine as the session invokes it: started from a TurnStart, its checkpointing supplied by the composition. */
export type TurnActorLogic = ActorLogic<TurnSnapshot, TurnEvent, TurnStart>;
