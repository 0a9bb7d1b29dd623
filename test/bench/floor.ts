/**
 * The physical floor of a benchmark turn, without troupe: what one turn of the overhead scenario
 * cannot avoid, done by hand with Node's http client and classic-level. Per turn: two model calls
 * over loopback (a request body the size troupe sends, the JSON answer parsed), one readdir (the
 * list_dir tool) and one synced LevelDB batch of the size a turn writes (group-committed, as troupe does).
 * 1,000 turns, 100 at once, against the same fake model, twice; CPU per turn (this process) of the
 * second. `node --import tsx test/bench/floor.ts` prints it alone; the daemon bench prints it beside troupe's.
 */
import { Agent, request } from "node:http";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClassicLevel } from "classic-level";
import { fakeModel } from "./harness.js";

export async function turnFloor(turns = 1_000, concurrency = 100): Promise<{ cpuPerTurn: number; wall: number }> {
  const model = await fakeModel(0);
  const dir = await mkdtemp(join(tmpdir(), "troupe-floor-"));
  const db = new ClassicLevel<string, string>(join(dir, "db"));
  await db.open();
  const agent = new Agent({ keepAlive: true });
  const url = new URL(`${model.url.replace(/\/$/, "")}/chat/completions`);
  const filler = "x".repeat(6_000);
  const call = (toolResult: boolean) =>
    new Promise<unknown>((resolve, reject) => {
      const body = JSON.stringify({ model: "m", messages: [{ role: "system", content: filler }, { role: "user", content: "list the workspace" }, ...(toolResult ? [{ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "list_dir", arguments: "{}" } }] }, { role: "tool", tool_call_id: "c1", content: "a\nb" }] : [])], tools: [{ type: "function", function: { name: "list_dir", parameters: { type: "object", properties: {} } } }] });
      const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
  // Group commit: every write asked for in one tick shares one synced batch.
  let pending: Array<{ ops: Array<{ type: "put"; key: string; value: string }>; done: () => void }> = [];
  const write = (ops: Array<{ type: "put"; key: string; value: string }>) =>
    new Promise<void>((resolve) => {
      if (pending.length === 0) setImmediate(async () => {
        const group = pending;
        pending = [];
        await db.batch(group.flatMap((g) => g.ops), { sync: true });
        for (const g of group) g.done();
      });
      pending.push({ ops, done: resolve });
    });
  const record = "y".repeat(2_500);
  const turn = async (i: number) => {
    await call(false);
    await readdir(dir);
    await call(true);
    await write([{ type: "put", key: `turn:${i}`, value: record }, { type: "put", key: `msg:${i}`, value: record }]);
  };
  const pass = async (from: number) => {
    let next = from;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < from + turns) await turn(next++);
    }));
  };
  // Twice, as troupe's bursts: the first while V8 still optimizes, the second measured.
  await pass(0);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await pass(turns);
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  agent.destroy();
  await db.close();
  model.stop();
  await rm(dir, { recursive: true, force: true });
  return { cpuPerTurn: (cpu.user + cpu.system) / 1000 / turns, wall };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = await turnFloor();
  console.log(`floor: 1,000 turns in ${f.wall.toFixed(0)} ms, CPU ${f.cpuPerTurn.toFixed(2)} ms per turn`);
}
