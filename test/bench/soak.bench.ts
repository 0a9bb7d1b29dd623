/**
 * `npm run bench:soak`: a real `troupe gateway` process (the bundled CLI, as users run it) under
 * steady traffic for TROUPE_SOAK_MINUTES (30): every ~2 s, 200 sessions (drawn from 1,000, so
 * sessions passivate and come back) each send a message with one tool call against a 50 ms model,
 * with a context window small enough that sessions consolidate within the first third.
 * The gateway's RSS (from /proc) is printed every minute; growth would show a leak. Judged by the
 * last third of the run against the middle third (the first third is warm-up: code, caches, pools).
 */
import { sendMessage } from "../helpers/gateway.js";
import { benchGateway, rssOf } from "./proc.js";
import { record } from "./summary.js";

const MB = 1024 * 1024;
const minutes = Number(process.env.TROUPE_SOAK_MINUTES ?? 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

// A small context window: each session reaches its consolidation threshold within the first third,
// so the two thirds compared hold sessions at their steady size (history archived as it grows), as a
// long-running daemon's do; with the default 65,536 tokens they would still be growing at 30 minutes.
const { gateway, pid, stop } = await benchGateway("soak", 50, { maxConcurrentTurns: 100, sessionIdleSeconds: 5, contextWindowTokens: 12_000, maxTokens: 2_048 });
console.log(`## soak: ${minutes} min of steady traffic to a real gateway (200 sessions of 1,000 every ~2 s, one tool call each, 50 ms model)`);

const rss: number[] = [];
let turns = 0;
let missed = 0;
const start = Date.now();
const end = start + minutes * 60_000;
const minute = setInterval(() => {
  void rssOf(pid).then((bytes) => {
    rss.push(bytes);
    console.log(`minute ${String(rss.length).padStart(2)}: RSS ${(bytes / MB).toFixed(0)} MB, ${turns.toLocaleString("en")} turns`);
  });
}, 60_000);
while (Date.now() < end) {
  const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => sendMessage(gateway, `api:soak${(turns + i) % 1_000}`, "list the workspace").replied));
  missed += replies.filter((r) => !r).length;
  turns += 200;
  await sleep(2_000);
}
clearInterval(minute);
await stop();

const third = Math.floor(rss.length / 3);
if (third < 1) {
  console.log("(too short to judge growth: run at least 3 minutes)");
  process.exit(0);
}
const middle = mean(rss.slice(third, 2 * third));
const last = mean(rss.slice(2 * third));
const ratio = last / middle;
console.log(`mean RSS, middle third ${(middle / MB).toFixed(0)} MB → last third ${(last / MB).toFixed(0)} MB (${ratio.toFixed(2)}×); ${turns.toLocaleString("en")} turns, ${missed} without a reply`);
record({
  figure: `soak, ${minutes} min: gateway RSS, last third vs middle third`,
  target: "no growth (≤ 1.1×)",
  measured: `${ratio.toFixed(2)}× (${(middle / MB).toFixed(0)} → ${(last / MB).toFixed(0)} MB, ${turns.toLocaleString("en")} turns)`,
  pass: ratio <= 1.1 && missed === 0,
});
