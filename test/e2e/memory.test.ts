import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import * as fs from "node:fs";
import git from "isomorphic-git";
import { describe, expect, it } from "vitest";
import { parseHistory } from "../../src/memory/history-entry.js";
import { startFakeOpenAi, type FakeOpenAi, type RecordedRequest } from "../fixtures/fake-openai.js";
import { writeHome } from "../helpers/daemon.js";
import { getJson, sendMessage, startGateway, type GatewayProcess } from "../helpers/gateway.js";
import { useTempDirs } from "../helpers/tmp.js";
import { until } from "../helpers/wait.js";
import { closeAfterEach } from "../helpers/teardown.js";

const words = (n: number, w: string) => Array.from({ length: n }, () => w).join(" ");
const isSummary = (r: RecordedRequest) => String(r.body.messages[0]?.content).startsWith("You are troupe's memory consolidator");
const dreamPhase = (r: RecordedRequest) => {
  const system = String(r.body.messages[0]?.content);
  return system.includes("first phase: analysis") ? "analyse" : system.includes("second phase: editing") ? "edit" : undefined;
};

interface SessionDetail {
  turns: Array<{ state: string; final: boolean }>;
}

describe("memory in a real gateway (consolidation, Dream, kill -9)", () => {
  const tmp = useTempDirs();
  let fake: FakeOpenAi | undefined;
  let gateway: GatewayProcess | undefined;
  closeAfterEach(() => [gateway, fake]);

  const historyOf = async (dir: string) => parseHistory(await readFile(join(dir, "workspace/memory/history.jsonl"), "utf8").catch(() => ""));

  it.each([{ fault: undefined }, { fault: "consolidate-before-append" }, { fault: "consolidate-after-append" }])(
    "a long session is consolidated into history.jsonl (kill -9 at $fault: nothing lost, nothing archived twice)",
    async ({ fault }) => {
      let summaries = 0;
      fake = await startFakeOpenAi([], (r) => (isSummary(r) ? { content: `- [durable] summary ${++summaries} of the long talk` } : { content: `answer ${words(200, "pear")}` }));
      const dir = await tmp();
      await writeHome(dir, fake.url, { defaults: { contextWindowTokens: 5_000, maxTokens: 500, dream: { enabled: false } }, config: { gateway: { port: 0 } } });
      gateway = await startGateway(dir, fault ? { TROUPE_FAULT: fault } : {});
      let killed = false;
      for (let i = 0; i < 10; i++) {
        const content = `message ${i} ${words(200, "apple")}`;
        const sent = sendMessage(gateway, "api:long", content);
        const replied = await sent.replied;
        if (!replied && fault && !killed) {
          // The fault killed the gateway mid-consolidation (before this turn, or in the background
          // after the last one): the restarted one finishes the turn, or is sent the message again
          // if it never reached the inbox.
          expect((await gateway.exited).signal).toBe("SIGKILL");
          killed = true;
          gateway = await startGateway(dir);
          const g = gateway;
          if (!(await sent.accepted)) expect(await sendMessage(g, "api:long", content).replied).toBe(true);
          await until(async () => (await getJson<SessionDetail>(g, "/api/sessions/api:long")).turns.filter((t) => t.final).length >= i + 1, 60_000, `turn ${i} after the restart`);
        } else expect(replied).toBe(true);
      }
      if (fault && !killed) {
        // The background consolidation after the last turn is where it died.
        const died = gateway;
        await until(() => died.proc.signalCode !== null || died.proc.exitCode !== null, 60_000, "the fault to kill the gateway");
        expect(died.proc.signalCode).toBe("SIGKILL");
        killed = true;
        gateway = await startGateway(dir);
      }
      const g = gateway;
      // The background consolidation after the last turn may still be writing.
      await until(async () => (await historyOf(dir)).length > 0, 30_000, "history.jsonl");
      const entries = (await historyOf(dir)).filter((e) => e.session_key === "api:long");
      expect(entries[0]!.content).toMatch(/^- \[durable\] summary \d+ of the long talk$/);
      // The archived ranges follow each other from the session's first message: none lost, none twice.
      const ranges = entries.map((e) => [e.archived!.from, e.archived!.to] as const);
      expect(ranges[0]![0]).toBe(0);
      for (let k = 1; k < ranges.length; k++) expect(ranges[k]![0]).toBe(ranges[k - 1]![1]);
      // /status reads the session's stored consolidation state, which an archive writes just after its
      // history entry: asked while the last archive is between the two, it says the one before. Asked
      // again until it has caught up with the last entry read above (it never goes back).
      let asked = 0;
      const statusReply = async () => {
        expect(await sendMessage(g, "api:long", "/status").replied).toBe(true);
        asked++;
        // The mailbox is written as the reply is delivered, a moment after the stream has it.
        return until(
          async () => (await getJson<{ replies: Array<{ content: string }> }>(g, "/api/sessions/api:long/replies")).replies.filter((r) => r.content.startsWith("🎭 troupe"))[asked - 1]?.content,
          20_000,
          "the /status reply",
        );
      };
      const consolidated = (status: string) => Number(/; (\d+) consolidated into memory/.exec(status)![1]);
      let status = await statusReply();
      for (let i = 0; i < 20 && consolidated(status) < ranges.at(-1)![1]; i++) status = await statusReply();
      expect(status).toMatch(/📚 Context: \d+k?\/5k \(\d+% of input budget\)/);
      expect(consolidated(status)).toBeGreaterThanOrEqual(ranges.at(-1)![1]);
    },
    180_000,
  );

  it.each(["dream-analysing", "dream-editing", "dream-committing"])(
    "Dream killed in %s resumes after the restart: MEMORY.md edited once, one commit, the cursor advanced",
    async (fault) => {
      fake = await startFakeOpenAi([], (r) => {
        const phase = dreamPhase(r);
        if (phase === "analyse") return { content: "memory/MEMORY.md: add: the user has a cat named Luna" };
        if (phase === "edit") {
          if (r.body.messages.at(-1)!.role === "tool") return { content: "Added the cat Luna" };
          return { toolCalls: [{ name: "edit_file", arguments: { path: "memory/MEMORY.md", old_text: "## Pets\n", new_text: "## Pets\n- Has a cat named Luna\n" } }] };
        }
        return { content: "ok" };
      });
      const dir = await tmp();
      // Dream is due a moment after the first start.
      await writeHome(dir, fake.url, { defaults: { dream: { intervalH: 0.0005 } }, config: { gateway: { port: 0 } } });
      const ws = join(dir, "workspace");
      await mkdir(join(ws, "memory"), { recursive: true });
      await writeFile(join(ws, "memory/MEMORY.md"), "# Long-term memory\n\n## Pets\n");
      await writeFile(join(ws, "memory/history.jsonl"), `${JSON.stringify({ cursor: 1, timestamp: "2026-04-01 10:00", content: "- [permanent] the user has a cat named Luna" })}\n`);
      gateway = await startGateway(dir, { TROUPE_FAULT: fault });
      expect((await gateway.exited).signal).toBe("SIGKILL");
      gateway = await startGateway(dir);
      await until(async () => (await readFile(join(ws, "memory/.dream_cursor"), "utf8").catch(() => "")).trim() === "1", 60_000, "the dream cursor");
      expect((await readFile(join(ws, "memory/MEMORY.md"), "utf8")).match(/Luna/g)).toHaveLength(1);
      const commits = await until(async () => {
        const log = await git.log({ fs, dir: ws });
        return log.some((c) => c.commit.message.startsWith("dream:")) ? log : undefined;
      }, 30_000, "the dream commit");
      expect(commits.filter((c) => c.commit.message.startsWith("dream:"))).toHaveLength(1);
      expect(commits[0]!.commit.message).toMatch(/^dream: Added the cat Luna\n/);
      // The analysis is stored once made: a crash after it never asks for it again.
      expect(fake.requests.filter((r) => dreamPhase(r) === "analyse").length).toBe(1);
      // The live actor tree shows Dream and its state.
      const { root } = await getJson<{ root: { children: Array<{ id: string; state: string }> } }>(gateway, "/api/actors");
      expect(root.children.find((c) => c.id === "dream")?.state).toBe("idle");
    },
    120_000,
  );
});
