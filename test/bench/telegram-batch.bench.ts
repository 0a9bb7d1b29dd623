/**
 * How long the Telegram channel takes to accept one getUpdates answer of 100 messages from 100
 * chats (figures printed for information, no target): from the fake Bot API handing the batch out
 * to the last of its messages taken in (published as `inbound`, i.e. stored in the inbox with the
 * offset past it), and how many synced store batches took them in (messages or offset). An
 * in-process daemon on a fake Bot API (127.0.0.1, same process) and the bench's fake model (own
 * process, 50 ms a call, 2 calls a turn); one warm-up round, then ROUNDS rounds of fresh chats, each
 * waiting for every answer before the next. The timer starts at the fake's answer, so the fake's
 * 20 ms idle-poll step is not counted.
 * `node --import tsx test/bench/telegram-batch.bench.ts`. The daemon is troupe's bundle, compiled as
 * the CLI is, not its source under tsx (test/bench/harness.ts says why).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StoreOp } from "../../src/store/store.js";
import { startFakeTelegram } from "../fixtures/fake-telegram.js";
import { telegramOn, writeHome } from "../helpers/home.js";
import { daemonAt, fakeModel } from "./harness.js";

const BATCH = 100;
const ROUNDS = Number(process.env.TROUPE_BENCH_ROUNDS ?? 5);

const model = await fakeModel(50);
const tg = await startFakeTelegram("123:BENCH");
const dir = await mkdtemp(join(tmpdir(), "troupe-bench-tg-"));
await writeHome(dir, model.url, { config: { channels: { telegram: telegramOn(tg) } } });
const daemon = await daemonAt(dir, { telegram: { pollTimeoutS: 1 } });

/** Synced batches that take messages in or move the offset. */
let intake = 0;
const batch = daemon.store.batch.bind(daemon.store);
daemon.store.batch = (ops: StoreOp[], opts?: { sync?: boolean }) => {
  if (opts?.sync && ops.some((o) => o.type === "put" && (o.sublevel === "inbox" || o.key === "telegram:offset"))) intake++;
  return batch(ops, opts);
};

let nextChat = 1_000;
async function round(): Promise<{ ms: number; batches: number }> {
  const chats = Array.from({ length: BATCH }, () => nextChat++);
  const mine = new Set(chats.map(String));
  let taken = 0;
  let lastTaken = 0;
  const inbound = daemon.bus.ofType("inbound").subscribe((e) => {
    if (mine.has(e.chatId) && ++taken === BATCH) lastTaken = performance.now();
  });
  const answered = new Set<string>();
  const before = intake;
  const t0 = performance.now();
  for (const chat of chats) tg.message("list the workspace", { id: 42, username: "alice" }, { id: chat, type: "private" });
  while (answered.size < BATCH) {
    await new Promise((r) => setTimeout(r, 20));
    for (const s of tg.sent()) if (mine.has(String(s.chat_id))) answered.add(String(s.chat_id));
  }
  inbound.unsubscribe();
  // The poll that hands the batch out was already waiting when it was queued.
  const handedOut = tg.calls.filter((c) => c.answered && c.answered.at >= t0);
  if (handedOut.length !== 1 || handedOut[0]!.answered!.updates !== BATCH) throw new Error(`expected one getUpdates answer of ${BATCH}, got ${JSON.stringify(handedOut.map((c) => c.answered))}`);
  return { ms: lastTaken - handedOut[0]!.answered!.at, batches: intake - before };
}

const runs: Array<{ ms: number; batches: number }> = [];
try {
  await round();
  for (let i = 0; i < ROUNDS; i++) runs.push(await round());
} finally {
  // The fake model is a child process: it must not outlive a failed run.
  model.stop();
}
const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
console.log(
  `telegram: accept a getUpdates answer of ${BATCH} messages (${ROUNDS} rounds): median ${ms[Math.floor(ms.length / 2)]!.toFixed(1)} ms ` +
    `(min ${ms[0]!.toFixed(1)}, max ${ms.at(-1)!.toFixed(1)}), synced intake batches per answer: ${runs.map((r) => r.batches).join(", ")}`,
);
await daemon.shutdown();
await tg.close();
await rm(dir, { recursive: true, force: true });
