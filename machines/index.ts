import { cronMachine } from "./cron.machine.js";
import { dreamMachine } from "./dream.machine.js";
import { mcpMachine } from "./mcp.machine.js";
import { sessionMachine } from "./session.machine.js";
import { supervisorMachine } from "./supervisor.machine.js";
import { telegramPollerMachine } from "./telegram.machine.js";
import { turnMachine } from "./turn.machine.js";

/** Every machine troupe runs, for `troupe inspect` and the live inspector. */
export const machines = {
  supervisor: supervisorMachine,
  session: sessionMachine,
  turn: turnMachine,
  telegram: telegramPollerMachine,
  cron: cronMachine,
  mcp: mcpMachine,
  dream: dreamMachine,
} as const;

export type MachineName = keyof typeof machines;
