import type { Printer } from "./printer.js";

// What `troupe agent` talks to: this process, the daemon, or another `troupe agent` lending the store.

/** What a message got: the reply, and how its turn ended (none for a command's answer). */
export interface Answer {
  content: string;
  state?: string;
  /** The message tool already wrote to this chat in the turn (nanobot's _sent_in_turn): the reply is not shown again. */
  alreadySent?: boolean;
}
/**
 * The turn answered: a reply, or a command's answer. A turn stopped at the tool-iteration limit
 * answered too: its summary (or the fixed text) is the reply, as nanobot's CLI prints it.
 */
export const succeeded = (a: Answer) => a.state === undefined || a.state === "responded" || a.state === "max_iterations";

/** Where the conversation happens: in this process, or in the running daemon. */
export interface Backend {
  /** Sends one message; streamed text and messages go to `printer`; resolves with the reply. */
  ask(content: string, printer: Printer): Promise<Answer>;
  /** Asks the running turn to stop (Ctrl-C, /stop); false when nothing runs. */
  cancel(): boolean;
  close(): Promise<void>;
}

export const isStop = (content: string) => content.trim().split(/\s+/)[0]?.toLowerCase() === "/stop";
export const NOTHING_RUNS = "Nothing is running.";

/** Where notes about the connection and messages that arrive between turns are printed. */
export interface AgentIo {
  /** A note (reconnecting, reconnected). */
  say(text: string): void;
  /** A message for the chat that came outside a turn (a subagent's report answered, a message-tool send). */
  message(text: string): void;
}

export interface RemoteOptions {
  /** Print what reaches the chat between turns (interactive). */
  follow: boolean;
  /** How long a message waits for a daemon that went away. */
  waitMs: number;
  /** The troupe agent (pid) that lent the store is gone and nothing holds it: opens it here; true once the chat runs in-process. */
  takeOver?: (lenderPid: number) => Promise<boolean>;
}

/** This backend was replaced by another (the chat moved in-process): ask that one. */
export class BackendReplaced extends Error {}

/** The chat's session. */
export interface ChatOptions {
  session: string;
  /** One message (`agent -m`, piped stdin): stdout holds its reply alone, an interrupted earlier turn's goes to stderr. */
  oneShot?: boolean;
  /** Show the runtime's log lines on stderr (`--logs`). */
  logs?: boolean;
}

