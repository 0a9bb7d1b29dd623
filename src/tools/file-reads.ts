import { createHash } from "node:crypto";
import type { ToolContext } from "./contract.js";

/**
 * What the file tools saw of each file in the running turn, so edit_file can warn when it edits a
 * file the model has not read in this turn (its old_text is from memory) or that changed since.
 * In memory only: after a restart a resumed turn's first edit may warn once, which is harmless.
 */
export interface FileReads {
  /** read_file read the file, or a tool wrote it: `content` is what the model now knows is there. */
  saw(ctx: Pick<ToolContext, "sessionKey" | "turnId">, path: string, content: string | Buffer): void;
  /** A warning for an edit of `path` whose current content is `content`, or undefined when it was read and is unchanged. */
  check(ctx: Pick<ToolContext, "sessionKey" | "turnId">, path: string, content: string | Buffer, shown: string): string | undefined;
}

/** Turns remembered at once: the running turns of every session, with room to spare. */
const MAX_TURNS = 256;

const digest = (content: string | Buffer) => createHash("sha1").update(content).digest("hex");

export function createFileReads(): FileReads {
  const turns = new Map<string, Map<string, string>>();
  const key = (ctx: Pick<ToolContext, "sessionKey" | "turnId">) => `${ctx.sessionKey}\u0000${ctx.turnId}`;
  return {
    saw(ctx, path, content) {
      const k = key(ctx);
      let files = turns.get(k);
      if (!files) {
        if (turns.size >= MAX_TURNS) turns.delete(turns.keys().next().value!);
        turns.set(k, (files = new Map()));
      }
      files.set(path, digest(content));
    },
    check(ctx, path, content, shown) {
      const seen = turns.get(key(ctx))?.get(path);
      if (seen === undefined) return `Warning: ${shown} has not been read in this turn; the edit was made on old_text as given. Read a file with read_file before editing it.`;
      if (seen !== digest(content)) return `Warning: ${shown} was modified since it was read in this turn; read it again to check the edit.`;
      return undefined;
    },
  };
}
