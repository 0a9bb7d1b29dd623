/** What the chat commands of Dream need: the daemon's Dream actor, or Dream run in this process. */
export interface DreamControl {
  /** Runs Dream now; resolves with what it did, once it is done. */
  run(): Promise<string>;
  /** Recent Dream commits, or one with its diff. */
  log(sha?: string): Promise<string>;
  /** Restores the memory files as they were at a commit (itself a new commit). */
  restore(sha: string): Promise<string>;
  /** /dream-prompt [init]: which guide Dream uses, or an editable copy of the default. */
  prompt(arg?: string): Promise<string>;
}

/** The answer to /dream, /dream-log [sha], /dream-restore [sha] or /dream-prompt [init]; undefined for any other word. */
export async function dreamCommand(control: DreamControl | undefined, text: string): Promise<string | undefined> {
  const [word = "", arg] = text.trim().split(/\s+/);
  const command = word.toLowerCase();
  if (!["/dream", "/dream-log", "/dream-restore", "/dream-prompt"].includes(command)) return undefined;
  if (!control) return "Dream is not available in this process.";
  if (command === "/dream") return control.run();
  if (command === "/dream-log") return control.log(arg);
  if (command === "/dream-prompt") return control.prompt(arg);
  if (!arg) return "Usage: /dream-restore <sha> (see /dream-log for the commits)";
  return control.restore(arg);
}
