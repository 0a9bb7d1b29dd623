import { Command } from "commander";
import { TroupeError } from "../errors.js";
import { VERSION } from "../version.js";
import { runAgent } from "./agent.js";
import { loadForCli } from "./load.js";
import { onboard } from "./onboard.js";
import { statusLines } from "./status.js";

const program = new Command()
  .name("troupe")
  .description("A personal AI agent runtime, run as a supervised actor system")
  .version(VERSION, "-v, --version")
  .showHelpAfterError();

program
  .command("onboard")
  .description("write config.json with defaults and fill the workspace from templates (never overwrites)")
  .action(async () => {
    const r = await onboard(await loadForCli());
    console.log(`${r.configCreated ? "created" : "kept"} ${r.configFile}`);
    console.log(`workspace ${r.workspace}: ${r.created.length} file(s) created, ${r.kept.length} kept`);
    for (const f of r.created) console.log(`  + ${f}`);
    if (r.configCreated) console.log("next: set a provider key, e.g. providers.openai.apiKey in config.json");
  });

program
  .command("status")
  .description("show config, workspace, model, providers and store")
  .action(async () => {
    for (const line of statusLines(await loadForCli())) console.log(line);
  });

program
  .command("agent")
  .description("talk to the agent: one message with -m, else an interactive prompt")
  .option("-m, --message <text>", "send one message, print the reply and exit")
  .option("-s, --session <key>", "session key (channel:chatId)", "cli:direct")
  .action(async (opts: { message?: string; session: string }) => {
    process.exitCode = await runAgent(await loadForCli(), opts);
  });

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof TroupeError) {
    console.error(err.message);
    process.exit(err.exitCode);
  }
  // Anything else is a bug or an environment failure: one line, the stack only when asked for.
  console.error(`troupe: unexpected error: ${(err as Error).message ?? String(err)} (set TROUPE_DEBUG=1 for the stack trace)`);
  if (process.env.TROUPE_DEBUG) console.error(err);
  process.exit(1);
}
