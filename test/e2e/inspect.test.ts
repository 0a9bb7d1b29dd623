import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { machines } from "../../machines/index.js";

/** Every machine of the catalogue, in its order: the CLI must draw each one. */
const MACHINE_NAMES = Object.keys(machines);

/** `troupe inspect` with no daemon: the machines as text, Mermaid, JSON and an HTML page. */
describe("troupe inspect", () => {
  let home: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "troupe-inspect-"));
    env = { TROUPE_HOME: home };
  });
  afterAll(() => rm(home, { recursive: true, force: true }));

  it("lists every machine with its states, events and transitions", async () => {
    const r = await runCli(["inspect"], env);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    for (const name of ["supervisor", "session", "turn", "telegram"]) expect(r.stdout).toContain(`${name} (machine "${name}"`);
    for (const state of ["awaiting_model", "awaiting_tools", "tools_completed", "responded", "failed", "cancelled", "max_iterations"]) expect(r.stdout).toContain(state);
    expect(r.stdout).toContain("events: cancel, checkpointed, inject");
    expect(r.stdout).toContain("done: callModel [hasToolCalls] → awaiting_tools");
  });

  it("--format mermaid prints a stateDiagram-v2 for one machine", async () => {
    const r = await runCli(["inspect", "turn", "--format", "mermaid"], env);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith("stateDiagram-v2")).toBe(true);
    expect(r.stdout).toContain("awaiting_model --> awaiting_tools");
    expect(r.stdout).toContain("tools_completed --> awaiting_model");
  });

  it("--format json prints the graph", async () => {
    const r = await runCli(["inspect", "--format", "json"], env);
    const graphs = JSON.parse(r.stdout) as Array<{ name: string; states: Array<{ key: string }>; events: string[] }>;
    expect(graphs.map((g) => g.name)).toEqual(MACHINE_NAMES);
    expect(MACHINE_NAMES).toEqual(expect.arrayContaining(["supervisor", "session", "turn", "telegram", "cron", "mcp", "dream"]));
    expect(graphs.find((g) => g.name === "turn")?.events).toEqual(["cancel", "checkpointed", "inject"]);
  });

  it("--out writes a standalone page with everything inline", async () => {
    const out = join(home, "machines.html");
    const r = await runCli(["inspect", "--out", out], env);
    expect(r.code).toBe(0);
    const html = await readFile(out, "utf8");
    expect(html).toContain("troupeStatechart");
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
  });

  it("bad input is one line saying what to do", async () => {
    const unknown = await runCli(["inspect", "nope"], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe(`no machine named "nope"; the machines are: ${MACHINE_NAMES.join(", ")}`);
    const format = await runCli(["inspect", "--format", "dot"], env);
    expect(format.stderr).toContain("--format must be one of text, mermaid, json");
    const live = await runCli(["inspect", "--live"], env);
    expect(live.code).toBe(1);
    expect(live.stderr).toContain("no troupe daemon is running");
  });

  it("--help names the machines [machine] takes, each of the catalogue", async () => {
    const help = await runCli(["inspect", "--help"], env);
    expect(help.code).toBe(0);
    const line = /Arguments:\n {2}machine +(.+(?:\n {10,}.+)*)/.exec(help.stdout)?.[1]?.replace(/\s+/g, " ");
    expect(line).toBeDefined();
    expect(line!.split(": ").at(-1)!.split(", ")).toEqual(MACHINE_NAMES);
  });
});
