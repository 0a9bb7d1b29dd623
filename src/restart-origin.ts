import { z } from "zod";

/** The chat a /restart came from, and when: the next gateway tells that chat it is back. */
export const restartOriginSchema = z.object({ sessionKey: z.string(), channel: z.string(), chatId: z.string(), at: z.number() });
export type RestartOrigin = z.infer<typeof restartOriginSchema>;
