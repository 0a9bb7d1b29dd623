import { z } from "zod";
import { TroupeError } from "./errors.js";
import { lazySchema } from "./lazy-schema.js";

/**
 * A session key (`channel:chatId`, e.g. `telegram:42`, `api:me`, `subagent:<id>`). The store lists
 * a session's records by key prefix, ending the key with KEY_END; a key that could contain KEY_END
 * would list (and so read, answer and feed to the model) another session's records. So keys are
 * printable text of bounded length, checked with this one schema wherever a key comes in: the
 * control API's path, a channel's inbound message, the CLI's --session.
 */

export const SESSION_KEY_MAX = 200;

/** Ends a key inside store keys (`msg:<key>\0…`); a valid key never contains it. */
export const KEY_END = "\x00";

/** Control, format (bidi overrides, zero-width), surrogate, private-use and unassigned characters; line and paragraph separators. */
const UNPRINTABLE = /[\p{C}\p{Zl}\p{Zp}]/u;

const codePoint = (ch: string) => `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;

// Built at its first use: a valid key (every key of a `troupe agent -m`) never needs it.
export const sessionKeySchema = lazySchema(() =>
  z
    .string()
    .min(1, "must not be empty")
    .max(SESSION_KEY_MAX, `must be at most ${SESSION_KEY_MAX} characters`)
    .superRefine((key, ctx) => {
      const bad = UNPRINTABLE.exec(key);
      if (!bad) return;
      const kind = /\p{Cc}/u.test(bad[0]) ? "a control character" : "a non-printable character";
      ctx.addIssue({ code: "custom", message: `must be printable text, but has ${kind} (${codePoint(bad[0])}) at position ${bad.index}` });
    }),
);

export type SessionKey = z.infer<typeof sessionKeySchema>;

/** A key as it can be shown in a message or a terminal: unprintable characters escaped, long keys cut. */
export const showKey = (key: string) =>
  `"${key.slice(0, 60).replace(new RegExp(UNPRINTABLE.source, "gu"), (ch) => `\\u{${ch.codePointAt(0)!.toString(16)}}`)}${key.length > 60 ? "…" : ""}"`;

export class InvalidSessionKeyError extends TroupeError {}

/** The key, checked; an invalid one throws InvalidSessionKeyError saying what is wrong with it. */
export function parseSessionKey(key: string): SessionKey {
  // Every inbound message comes through here: a valid key (the schema's own tests) skips zod; an invalid one gets its message from the schema.
  if (typeof key === "string" && key.length >= 1 && key.length <= SESSION_KEY_MAX && !UNPRINTABLE.test(key)) return key;
  const result = sessionKeySchema.safeParse(key);
  if (result.success) return result.data;
  throw new InvalidSessionKeyError(`invalid session key ${showKey(key)}: it ${result.error.issues.map((i) => i.message).join("; ")}`);
}
