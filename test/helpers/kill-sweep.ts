import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { ApiReply } from "../../src/channels/api.js";
import { dataPaths } from "../../src/paths.js";
import { inboxRecordSchema } from "../../src/store/inbox.js";
import { pendingOutbox } from "../../src/store/outbox.js";
import { openStore } from "../../src/store/store.js";
import { listOpenTurns } from "../../src/store/turns.js";
import { INTERRUPTED_RESULT } from "../../actors/run-tools.js";
import { EFFECTS_LOG, outContent, outFile, TAG } from "../fixtures/effects-model.js";
import { runCli } from "./cli.js";
import { getJson, sendMessage, startGateway, type GatewayProcess } from "./gateway.js";
import { createPrng } from "./prng.js";
import { sleep, until } from "./wait.js";

/**
 * The kill sweep's driver: one data dir and one gateway, killed with SIGKILL at random instants
 * while sessions run turns with counted effects (fixtures/effects-model.ts), restarted, and checked.
 * Runs are chained: the restart after one run's kill is the gateway the next run talks to, once the
 * first run's work has settled.
 */

/** A small seeded PRNG (mulberry32): the same seed gives the same schedule of messages and kills. */
export const seededRandom = (seed: number): (() => number) => createPrng(seed).next;

export interface RunSpec {
  run: number;
  sessions: number;
  /** Messages per session (kill and double); in stop mode the most a session gets while the stop is under way. */
  messages: number;
  /** kill: SIGKILL mid-work; double: and again shortly after the restart, during recovery; stop: SIGKILL while `troupe daemon stop` shuts it down gracefully. */
  mode: "kill" | "double" | "stop";
  /** The kill lands uniformly within this many ms of the first message (kill, double). */
  killWindowMs: number;
}

export interface Figures {
  runs: number;
  kills: number;
  /** Kills after which the restart found work to recover (a turn open or a message unanswered). */
  killsMidWork: number;
  posted: number;
  accepted: number;
  answered: number;
  /** Answered, though the POST's stream broke before it said `accepted` (not counted as accepted). */
  answeredUnconfirmed: number;
  lost: number;
  duplicates: number;
  reruns: number;
  stuck: number;
  failedRestarts: number;
  /** `troupe daemon stop` runs that did not end with the gateway stopped. */
  failedStops: number;
  /** Answered messages whose write_file effect is missing. */
  missingWrites: number;
  /** Replies whose text does not name exactly the messages they say they answer. */
  mismatched: number;
  /** exec calls the model was told were interrupted with their effect unknown (ran 0 or 1 times). */
  execInterrupted: number;
  ms: number;
}

export const BAD: Array<keyof Figures> = ["lost", "duplicates", "reruns", "stuck", "failedRestarts", "failedStops", "missingWrites", "mismatched"];

export const emptyFigures = (): Figures => ({
  runs: 0,
  kills: 0,
  killsMidWork: 0,
  posted: 0,
  accepted: 0,
  answered: 0,
  answeredUnconfirmed: 0,
  lost: 0,
  duplicates: 0,
  reruns: 0,
  stuck: 0,
  failedRestarts: 0,
  failedStops: 0,
  missingWrites: 0,
  mismatched: 0,
  execInterrupted: 0,
  ms: 0,
});

export function addFigures(into: Figures, more: Figures): void {
  for (const k of Object.keys(into) as Array<keyof Figures>) into[k] += more[k];
}

interface Posted {
  key: string;
  tag: string;
  id: Promise<string | undefined>;
}

interface SessionsResponse {
  sessions: Array<{ key: string; interrupted: number }>;
}
interface ActorsResponse {
  turns: { running: number; waiting: number };
}
interface DetailResponse {
  messages: Array<{ role: string; name?: string; content: string | null }>;
  turns: Array<{ turnId: string; state: string; resumes: number }>;
}

/** The mean gap between one session's messages (0 to twice this): some are injected into its running turn at any stage of it, some queue, some find it idle. */
const GAP_MS = 200;
const pad = (n: number) => String(n).padStart(2, "0");
const countBy = <T>(items: T[]) => items.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<T, number>());
const extra = (counts: Map<unknown, number>) => [...counts.values()].reduce((s, n) => s + Math.max(0, n - 1), 0);
const tagsIn = (text: string) => text.match(TAG) ?? [];
const alive = (g: GatewayProcess) => g.proc.exitCode === null && g.proc.signalCode === null;

/** What a run's replies and effects show, against the messages it posted and those accepted. */
async function tally(workspace: string, posts: Posted[], accepted: Map<string, Posted>, replies: ApiReply[], say: (line: string) => void): Promise<Partial<Figures>> {
  const f: Partial<Figures> = { posted: posts.length, accepted: accepted.size, mismatched: 0, missingWrites: 0 };
  const answers = countBy(replies.flatMap((r) => r.answers));
  f.answered = [...accepted.keys()].filter((id) => answers.has(id)).length;
  f.lost = f.accepted! - f.answered;
  if (f.lost) say(`  lost: ${[...accepted].filter(([id]) => !answers.has(id)).map(([id, p]) => `${p.tag} (${id})`).join(", ")}`);

  // A message answered twice shows twice among the replies' `answers`, and its tag in two replies' text.
  const tagsAnswered = countBy(replies.flatMap((r) => [...new Set(tagsIn(r.content))]));
  f.duplicates = Math.max(extra(answers), extra(tagsAnswered));
  if (f.lost || f.duplicates) say(`  replies: ${JSON.stringify(replies.map((r) => ({ d: r.deliveryId, a: r.answers, c: r.content })))}`);
  const confirmedTags = new Set([...accepted.values()].map((p) => p.tag));
  f.answeredUnconfirmed = [...tagsAnswered.keys()].filter((t) => !confirmedTags.has(t)).length;
  for (const r of replies) {
    const known = r.answers.map((id) => accepted.get(id)?.tag);
    if (known.some((t) => t === undefined)) continue; // answers a message whose id we never learnt
    const said = [...new Set(tagsIn(r.content))].sort();
    if (JSON.stringify(said) !== JSON.stringify([...(known as string[])].sort())) {
      f.mismatched!++;
      say(`  mismatched reply ${r.deliveryId}: answers ${JSON.stringify(known)}, says ${JSON.stringify(r.content)}`);
    }
  }

  // An exec run twice leaves its marker twice; a message worked on by two turns leaves two markers (two call ids).
  const runTags = new Set(posts.map((p) => p.tag));
  const lines = (await readFile(join(workspace, EFFECTS_LOG), "utf8").catch(() => "")).split("\n").filter((l) => runTags.has(l.split(" ")[0]!));
  f.reruns = extra(countBy(lines)) + extra(countBy([...new Set(lines)].map((l) => l.split(" ")[0]!)));
  if (f.reruns) say(`  effects: ${JSON.stringify(lines)}`);
  for (const tag of tagsAnswered.keys()) {
    const text = await readFile(join(workspace, outFile(tag)), "utf8").catch(() => undefined);
    if (text !== outContent(tag)) f.missingWrites!++;
  }
  return f;
}

export interface Sweep {
  /** Runs the spec's traffic without a kill: how long its work takes here and now (ms), to aim the kills within. */
  calibrate(spec: RunSpec): Promise<number>;
  run(spec: RunSpec): Promise<Figures>;
  /** Stops the gateway gracefully and counts what is left in the store: open turns, inbox, outbox. */
  finish(): Promise<Figures>;
  /** Lines describing each run, for a failure report. */
  log: string[];
}

export async function createSweep(home: string, rng: () => number, opts: { verbose?: boolean; answerMs?: number; quietMs?: number } = {}): Promise<Sweep> {
  const limits = { answerMs: opts.answerMs ?? 20_000, quietMs: opts.quietMs ?? 10_000 };
  const workspace = join(home, "workspace");
  const log: string[] = [];
  const say = (line: string) => {
    log.push(line);
    if (opts.verbose) console.log(line);
  };
  let gateway: GatewayProcess | undefined;

  /** Starts the gateway; a start that fails counts, and is tried once more. */
  async function start(f: Figures): Promise<GatewayProcess> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startGateway(home, {}, 30_000);
      } catch (err) {
        f.failedRestarts++;
        say(`  failed restart (attempt ${attempt}): ${String(err).slice(0, 2_000)}`);
        if (attempt >= 2) throw err;
      }
    }
  }

  async function kill(g: GatewayProcess): Promise<boolean> {
    const landed = alive(g);
    g.proc.kill("SIGKILL");
    const exit = await g.exited;
    if (landed && exit.signal !== "SIGKILL") say(`  the gateway exited on its own before the kill: ${JSON.stringify(exit)}\n${g.output().slice(-2_000)}`);
    return landed && exit.signal === "SIGKILL";
  }

  /**
   * Posts the run's messages on a seeded schedule; `stopped()` ends it early. Open loop: a message
   * every GAP_MS or so, so later ones come while the first one's turn runs. Closed loop: each session waits for its reply, then a moment, then sends the
   * next, so it has a turn running whenever the kill comes, however long that takes.
   */
  function send(g: GatewayProcess, spec: RunSpec, stopped: () => boolean, closedLoop = false): { posts: Posted[]; done: Promise<void> } {
    const posts: Posted[] = [];
    const done = Promise.all(
      Array.from({ length: spec.sessions }, async (_, s) => {
        const key = `api:r${pad(spec.run)}-s${pad(s)}`;
        for (let m = 0; m < spec.messages && !stopped(); m++) {
          const tag = `job-r${pad(spec.run)}-s${pad(s)}-m${pad(m)}`;
          const sent = sendMessage(g, key, `please do ${tag}`);
          posts.push({ key, tag, id: sent.accepted });
          if (closedLoop) await sent.replied;
          await sleep(closedLoop ? rng() * 150 : GAP_MS * 2 * rng());
        }
      }),
    ).then(() => undefined);
    return { posts, done };
  }

  async function mailbox(g: GatewayProcess, keys: string[]): Promise<ApiReply[]> {
    return (await Promise.all(keys.map((k) => getJson<{ replies: ApiReply[] }>(g, `/api/sessions/${encodeURIComponent(k)}/replies`)))).flatMap((r) => r.replies);
  }

  /** Waits until `probe` holds, bounded; false if it never did. */
  const within = (probe: () => Promise<boolean>, ms: number, what: string) =>
    until(async () => (await probe()) || undefined, ms, what).then(
      () => true,
      () => false,
    );

  async function calibrate(spec: RunSpec): Promise<number> {
    const g = gateway ?? (gateway = await start(emptyFigures()));
    const t0 = Date.now();
    const sent = send(g, spec, () => false);
    await sent.done;
    const ids = await Promise.all(sent.posts.map((p) => p.id));
    const keys = [...new Set(sent.posts.map((p) => p.key))];
    await until(
      async () => {
        const answered = new Set((await mailbox(g, keys)).flatMap((r) => r.answers));
        return ids.every((id) => id && answered.has(id));
      },
      limits.answerMs,
      "the calibration run's replies",
    );
    const ms = Date.now() - t0;
    say(`calibration: ${spec.sessions} session(s) × ${spec.messages} answered in ${ms} ms`);
    return ms;
  }

  async function killMidWork(g: GatewayProcess, spec: RunSpec) {
    const sent = send(g, spec, () => !alive(g));
    const delay = Math.round(rng() * spec.killWindowMs);
    await sleep(delay);
    const killed = await kill(g);
    say(`run ${spec.run} ${spec.mode}: ${spec.sessions} session(s) × ${spec.messages}, SIGKILL at ${delay} ms`);
    return { sent, killed };
  }

  /** Sessions keep working while `troupe daemon stop` starts up and sends SIGTERM; the kill lands 0–300 ms into the shutdown. */
  async function killDuringStop(g: GatewayProcess, spec: RunSpec, f: Figures) {
    const stopping = () => g.output().includes("shutting down") || !alive(g);
    const cli = runCli(["daemon", "stop"], { TROUPE_HOME: home });
    const sent = send(g, spec, stopping, true);
    const seen = await within(async () => stopping(), 20_000, "the graceful shutdown to begin");
    const delay = Math.round(rng() * 300);
    await sleep(delay);
    const killed = await kill(g);
    const stop = await cli;
    if (!seen || stop.code !== 0 || !stop.stdout.startsWith("troupe daemon stopped")) {
      f.failedStops++;
      say(`  troupe daemon stop did not stop the gateway: code ${stop.code} ${stop.stdout} ${stop.stderr}`);
    }
    say(`run ${spec.run} stop: SIGKILL ${delay} ms after the shutdown began (${killed ? "landed" : "too late: it had exited"})`);
    return { sent, killed };
  }

  async function run(spec: RunSpec): Promise<Figures> {
    const f = emptyFigures();
    f.runs = 1;
    const t0 = Date.now();
    const g = gateway ?? (gateway = await start(f));
    const { sent, killed } = spec.mode === "stop" ? await killDuringStop(g, spec, f) : await killMidWork(g, spec);
    await sent.done;
    const ids = await Promise.all(sent.posts.map((p) => p.id));
    const accepted = new Map<string, Posted>();
    sent.posts.forEach((p, i) => ids[i] && accepted.set(ids[i]!, p));
    const keys = [...new Set(sent.posts.map((p) => p.key))];
    f.kills += killed ? 1 : 0;

    gateway = await start(f);
    if (/recovering interrupted work/.test(gateway.output())) f.killsMidWork++;
    if (spec.mode === "double") {
      // Killed again while it recovers, then started once more.
      const again = Math.round(rng() * 400);
      await sleep(again);
      if (await kill(gateway)) f.kills++;
      say(`  and again ${again} ms after the restart`);
      gateway = await start(f);
      if (/recovering interrupted work/.test(gateway.output())) f.killsMidWork++;
    }
    const g2 = gateway;

    // Every accepted message answered; then nothing left running (a late duplicate would come by then).
    let replies: ApiReply[] = [];
    await within(
      async () => {
        replies = await mailbox(g2, keys);
        const answered = new Set(replies.flatMap((r) => r.answers));
        return [...accepted.keys()].every((id) => answered.has(id));
      },
      limits.answerMs,
      "every accepted message answered",
    );
    let open = 0;
    let busy = 0;
    const quiet = await within(
      async () => {
        const { sessions } = await getJson<SessionsResponse>(g2, "/api/sessions");
        const { turns } = await getJson<ActorsResponse>(g2, "/api/actors");
        open = sessions.reduce((s, x) => s + x.interrupted, 0);
        busy = turns.running + turns.waiting;
        return open === 0 && busy === 0;
      },
      limits.quietMs,
      "no open turns",
    );
    replies = await mailbox(g2, keys);

    const notes: string[] = [];
    Object.assign(f, await tally(workspace, sent.posts, accepted, replies, (line) => notes.push(line)));
    f.stuck = quiet ? 0 : open + busy;
    const bad = f.lost || f.duplicates || f.reruns || f.stuck || f.mismatched;
    for (const key of keys) {
      const detail = await getJson<DetailResponse>(g2, `/api/sessions/${encodeURIComponent(key)}`).catch(() => undefined);
      f.execInterrupted += detail?.messages.filter((m) => m.role === "tool" && m.name === "exec" && m.content === INTERRUPTED_RESULT).length ?? 0;
      if (bad && detail) {
        const users = detail.messages.filter((m) => m.role === "user").map((m) => m.content);
        notes.push(`  ${key}: turns ${JSON.stringify(detail.turns.map((t) => `${t.turnId} ${t.state} resumed ${t.resumes}×`))}, user messages ${JSON.stringify(users)}`);
      }
    }
    f.ms = Date.now() - t0;

    say(
      `  posted ${f.posted}, accepted ${f.accepted}, answered ${f.answered} (+${f.answeredUnconfirmed} unconfirmed), replies ${replies.length}, ` +
        `exec interrupted ${f.execInterrupted}; lost ${f.lost}, duplicates ${f.duplicates}, reruns ${f.reruns}, stuck ${f.stuck}, missing writes ${f.missingWrites}`,
    );
    for (const line of notes) say(line);
    if (bad) say(`  gateway output (tail):\n${g2.output().slice(-4_000)}`);
    return f;
  }

  async function finish(): Promise<Figures> {
    const f = emptyFigures();
    if (gateway && alive(gateway)) {
      gateway.proc.kill("SIGTERM");
      const exit = await gateway.exited;
      if (exit.code !== 0) {
        f.failedStops++;
        say(`the graceful stop at the end exited ${JSON.stringify(exit)}:\n${gateway.output().slice(-4_000)}`);
      }
    }
    gateway = undefined;
    const store = await openStore(dataPaths({ TROUPE_HOME: home }).storeDir);
    try {
      const open = await listOpenTurns(store);
      const inbox = await store.list("inbox", inboxRecordSchema);
      const outbox = await pendingOutbox(store);
      f.stuck = open.length + inbox.length + outbox.length;
      if (f.stuck) say(`left in the store: open turns ${JSON.stringify(open)}, inbox ${JSON.stringify(inbox.map((r) => r.value.content))}, outbox ${JSON.stringify(outbox.map((r) => r.content))}`);
    } finally {
      await store.close();
    }
    return f;
  }

  return { calibrate, run, finish, log };
}
