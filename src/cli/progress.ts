import { TURN_FINAL_STATES } from "../../machines/turn-states.js";
import type { Printer } from "./printer.js";

const FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
const LABELS: Record<string, string> = { awaiting_model: "thinking", finalizing: "thinking", awaiting_tools: "running tools", tools_completed: "thinking", finalizing_content: "finishing the reply" };

/**
 * The spinner `troupe agent` shows on a terminal while a person waits: the turn's state, each tool
 * as it runs ("⠋ exec: npm test (12 s)"), a model call being retried. It draws through the printer,
 * which shows it only at the start of a line and takes it away before anything else is written.
 */
export function createProgress(printer: Printer, opts: { now?: () => number; intervalMs?: number } = {}) {
  const now = opts.now ?? Date.now;
  let label: string | undefined;
  let since = now();
  let frame = 0;
  let timer: NodeJS.Timeout | undefined;

  const draw = () => {
    if (!label) return;
    printer.status(`${FRAMES[frame++ % FRAMES.length]} ${label} (${Math.floor((now() - since) / 1000)} s)`);
  };
  const show = (text: string) => {
    label = text;
    since = now();
    timer ??= setInterval(draw, opts.intervalMs ?? 120);
    timer.unref?.();
    draw();
  };
  const stop = () => {
    clearInterval(timer);
    timer = undefined;
    label = undefined;
    printer.status(undefined);
  };

  return {
    /** The turn moved to `state`; a final state ends the spinner. */
    state(state: string) {
      if ((TURN_FINAL_STATES as readonly string[]).includes(state)) return stop();
      const text = LABELS[state];
      if (text) show(text);
    },
    // The hint names the tool as nanobot does ("$ npm test", "read a.ts").
    tool: (tool: string, hint: string) => show(hint || tool),
    retry: (status: number | null, delayMs: number) => show(`model call failed (${status ?? "no answer"}), retrying in ${Math.max(1, Math.round(delayMs / 1000))} s`),
    fallback: (from: string, to: string) => show(`${from} failed, trying ${to}`),
    /** Text is streaming: the spinner steps aside until the line is done. */
    text: () => printer.status(undefined),
    stop,
  };
}
export type Progress = ReturnType<typeof createProgress>;
