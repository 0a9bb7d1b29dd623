import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { readSse } from "../../src/server/sse.js";
import { TROUPE_BIN } from "./cli.js";

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  auth: Record<string, string>;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
  /** Kills it (SIGKILL) and resolves once it has exited: a test's teardown. */
  close(): Promise<void>;
}

/** Starts `troupe gateway [args]` as a real process and waits until it listens (killing it after `timeoutMs`). */
export async function startGateway(home: string, env: Record<string, string> = {}, timeoutMs = 60_000, args: string[] = []): Promise<GatewayProcess> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const proc = spawn(process.execPath, [TROUPE_BIN, "gateway", ...args], { env: { ...clean, TROUPE_HOME: home, ...env } });
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const timer = setInterval(() => {
      const m = /troupe gateway on (http:\/\/\S+) /.exec(out);
      if (m) {
        clearInterval(timer);
        resolve(m[1]!);
      } else if (Date.now() > deadline) {
        clearInterval(timer);
        proc.kill("SIGKILL");
        reject(new Error(`gateway did not listen within ${timeoutMs} ms:\n${out}`));
      }
    }, 25);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`gateway exited before listening:\n${out}`));
    });
  });
  const token = (await readFile(join(home, "gateway.token"), "utf8")).trim();
  const close = async () => {
    proc.kill("SIGKILL");
    await exited;
  };
  return { proc, url, auth: { authorization: `Bearer ${token}` }, exited, output: () => out, close };
}

/**
 * POSTs a message and follows its event stream: `accepted` resolves with the message id, or
 * undefined if the stream ends or breaks first (the process may die while answering); `replied`
 * resolves with whether the reply came on the stream.
 */
export function sendMessage(g: GatewayProcess, sessionKey: string, content: string): { accepted: Promise<string | undefined>; replied: Promise<boolean> } {
  let accept!: (id: string | undefined) => void;
  const accepted = new Promise<string | undefined>((resolve) => (accept = resolve));
  const replied = (async () => {
    const res = await fetch(`${g.url}/api/sessions/${encodeURIComponent(sessionKey)}/messages`, {
      method: "POST",
      headers: { ...g.auth, "content-type": "application/json" },
      body: JSON.stringify({ content }),
    });
    for await (const m of readSse(res.body!)) {
      if (m.event === "accepted") accept((m.data as { id: string }).id);
      if (m.event === "reply") return true;
    }
    return false;
  })()
    .catch(() => false)
    .finally(() => accept(undefined));
  return { accepted, replied };
}

/** POSTs a message; resolves with its id once accepted, or undefined if the stream broke first. */
export const postMessage = (g: GatewayProcess, sessionKey: string, content: string): Promise<string | undefined> => sendMessage(g, sessionKey, content).accepted;

export async function getJson<T>(g: GatewayProcess, path: string): Promise<T> {
  const res = await fetch(`${g.url}${path}`, { headers: g.auth });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}
