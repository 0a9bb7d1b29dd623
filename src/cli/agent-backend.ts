import type { Printer } from "./printer.js";

/** What a message got: the reply, and how its turn ended (none for a command's answer). */
export interface Answer {
  content: string;
  state?: string;
}
export const succeeded = (a: Answer) => a.state === undefined || a.state === "responded";

/** Where the conversation happens: in this process, or in the running daemon. */
export interface Backend {
  /** Sends one message; streamed text and messages go to `printer`; resolves with the reply. */
  ask(content: string, printer: Printer): Promise<Answer>;
  /** Asks the running turn to stop (Ctrl-C, /stop); false when nothing runs. */
  cancel(): boolean;
  close(): Promise<void>;
  /** Replies that come while nobody asked (a subagent's report, answered by a turn of its own) go to `print`. */
  follow?(print: (text: string) => void): void;
}

export const isStop = (content: string) => content.trim().split(/\s+/)[0]?.toLowerCase() === "/stop";
export const NOTHING_RUNS = "Nothing is running.";

