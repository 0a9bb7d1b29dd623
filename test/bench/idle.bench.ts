/**
 * Idle memory (part of `npm run bench`): the resident size of a real `troupe gateway` process (the
 * bundled CLI, as users run it) once it has started and nothing happens; then after one turn (which
 * loads the model client) and again after 200 more sessions have each had a turn and passivated. Read from /proc/<pid>/status, settled: sampled every
 * 250 ms until five samples in a row stay within 1 MB.
 */
import { getJson, sendMessage } from "../helpers/gateway.js";
import { benchGateway, rssOf } from "./proc.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const SESSIONS = 200;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The process's RSS once it has stopped moving (or after 30 s, the last sample). */
async function settledRss(pid: number): Promise<number> {
  const samples: number[] = [];
  const deadline = Date.now() + 30_000;
  for (;;) {
    samples.push(await rssOf(pid));
    const last = samples.slice(-5);
    if (last.length === 5 && Math.max(...last) - Math.min(...last) < MB) return last.at(-1)!;
    if (Date.now() > deadline) return samples.at(-1)!;
    await sleep(250);
  }
}

const { gateway, pid, stop } = await benchGateway("idle", 0, { sessionIdleSeconds: 2 });
const idle = await settledRss(pid);
// One turn first: the first model call loads the openai SDK; what the sessions leave behind is measured from there.
if (!(await sendMessage(gateway, "api:warm-up", "list the workspace").replied)) throw new Error(`the warm-up turn got no reply: ${gateway.output()}`);
const warm = await settledRss(pid);

const replies = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => sendMessage(gateway, `api:idle${i}`, "list the workspace").replied));
if (replies.some((r) => !r)) throw new Error(`a reply did not come: ${gateway.output()}`);
const busy = await rssOf(pid);
// Every session passivates after 2 s idle; wait until the live tree holds none.
type Tree = { children?: Array<{ kind: string; children?: Array<{ kind: string }> }> };
const liveSessions = async () => {
  const { tree } = await getJson<{ tree: Tree }>(gateway, "/api/actors");
  const sessions = (t: Tree | undefined): number => (t?.children ?? []).reduce((n, c) => n + (c.kind === "session" ? 1 : 0) + sessions(c as Tree), 0);
  return sessions(tree);
};
const deadline = Date.now() + 60_000;
while ((await liveSessions()) > 0 && Date.now() < deadline) await sleep(250);
// V8 gives memory back when its memory reducer runs, some tens of seconds into idleness: the lowest
// RSS over the next 90 s (sooner if it is back within 5% of the one-turn figure).
let after = await rssOf(pid);
const idleSince = Date.now();
while (Date.now() - idleSince < 90_000 && after > warm * 1.05) {
  await sleep(1_000);
  after = Math.min(after, await rssOf(pid));
}
const idleFor = (Date.now() - idleSince) / 1000;

await stop();

console.log(`\n## idle memory of a real gateway process (bundled CLI)`);
console.log(`idle after start         ${(idle / MB).toFixed(0)} MB`);
console.log(`after one turn           ${(warm / MB).toFixed(0)} MB`);
console.log(`right after ${SESSIONS} turns     ${(busy / MB).toFixed(0)} MB`);
console.log(`idle, all passivated     ${(after / MB).toFixed(0)} MB (${(after / warm).toFixed(2)}× after one turn; lowest within ${idleFor.toFixed(0)} s of the last passivation)`);
record({ figure: "idle gateway RSS", target: "≤ 80 MB", measured: `${(idle / MB).toFixed(0)} MB`, pass: idle <= 80 * MB });
record({
  figure: `gateway RSS after ${SESSIONS} sessions passivated vs after one turn`,
  target: "≤ 1.2×",
  measured: `${(after / warm).toFixed(2)}× (${(warm / MB).toFixed(0)} → ${(after / MB).toFixed(0)} MB)`,
  pass: after / warm <= 1.2,
});
