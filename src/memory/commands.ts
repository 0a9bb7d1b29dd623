/** Dream's result when no history entry waits after .dream_cursor. */
export const NOTHING_TO_DIGEST = "nothing new to digest";

/** /dream's answer then (nanobot's _format_dream_no_input_message, told for troupe). */
const NO_INPUT = [
  "Dream has no conversation history to process yet.",
  "",
  "Dream reads the entries of `memory/history.jsonl` after the Dream cursor (`memory/.dream_cursor`). A conversation reaches that file only when it is archived: when it outgrows its context budget (agents.defaults.contextWindowTokens), or at `/new`. A short chat leaves Dream nothing to read.",
  "",
  "Next steps:",
  "- Send `/new` to archive this conversation into memory (it starts a new session), then `/dream` again.",
  "- If you expected entries, `troupe memory show` tells how many wait after the Dream cursor.",
  "- Use `/dream-prompt` to see or change how Dream organizes memory.",
].join("\n");

/** What the chat commands of Dream need: the daemon's Dream actor, or Dream run in this process. */
export interface DreamControl {
  /** Runs Dream now; resolves with what it did, once it is done. */
  run(): Promise<string>;
  /** Recent Dream commits, or one with its diff. */
  log(sha?: string): Promise<string>;
  /** Restores the memory files as they were at a commit (itself a new commit); without one, the versions to choose from. */
  restore(sha?: string): Promise<string>;
  /** /dream-prompt [init]: which guide Dream uses, or an editable copy of the default. */
  prompt(arg?: string): Promise<string>;
}

/** The answer to /dream, /dream-log [sha], /dream-restore [sha] or /dream-prompt [init]; undefined for any other word. */
export async function dreamCommand(control: DreamControl | undefined, text: string): Promise<string | undefined> {
  const [word = "", arg] = text.trim().split(/\s+/);
  const command = word.toLowerCase();
  if (!["/dream", "/dream-log", "/dream-restore", "/dream-prompt"].includes(command)) return undefined;
  if (!control) return "Dream is not available in this process.";
  if (command === "/dream") {
    const result = await control.run();
    return result === NOTHING_TO_DIGEST ? NO_INPUT : result;
  }
  if (command === "/dream-log") return control.log(arg);
  if (command === "/dream-prompt") return control.prompt(arg);
  return control.restore(arg);
}
