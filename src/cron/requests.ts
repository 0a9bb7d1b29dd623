import { z } from "zod";
import { NO_CHAT } from "./jobs.js";
import { ScheduleError } from "./schedule.js";
import type { AddJobInput } from "./service.js";

/** A job as `troupe cron add` sends it (to the control API, or straight to the store). */
export const addJobRequestSchema = z
  .object({
    name: z.string().optional(),
    message: z.string(),
    every: z.number().optional(),
    cron: z.string().optional(),
    tz: z.string().optional(),
    at: z.string().optional(),
    channel: z.string().min(1).optional(),
    to: z.string().min(1).optional(),
    catchUp: z.string().optional(),
  })
  .strict();
export type AddJobRequest = z.infer<typeof addJobRequestSchema>;

/**
 * The job input for a request. Without --channel and --to a job made from the command line has no
 * chat to report to: it runs, and its replies stay in its session (`troupe sessions show cron:<id>`).
 */
export function addJobInput(req: AddJobRequest): AddJobInput {
  if (Boolean(req.channel) !== Boolean(req.to)) throw new ScheduleError(req.channel ? "to" : "channel", "give --channel and --to together (e.g. --channel telegram --to 12345)");
  const target = req.channel && req.to ? { channel: req.channel, chatId: req.to } : { channel: NO_CHAT.channel, chatId: NO_CHAT.chatId };
  return {
    name: req.name,
    message: req.message,
    everySeconds: req.every,
    cronExpr: req.cron,
    tz: req.tz,
    at: req.at,
    catchUp: req.catchUp,
    target,
    deliver: Boolean(req.channel && req.to),
    createdBy: "cli",
  };
}
