import { turnMachine } from "./turn.machine.js";

/** Every machine troupe runs, for `troupe inspect` and the live inspector. */
export const machines = {
  turn: turnMachine,
} as const;

export type MachineName = keyof typeof machines;
