import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { TROUPE_BIN } from "./cli.js";

export interface GatewayProcess {
  proc: ChildProcess;
  url: string;
  auth: Record<string, string>;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

/** Starts `troupe gateway` as a real process and waits until it listens. */
export async function startGateway(home: string, env: Record<string, string> = {}): Promise<GatewayProcess> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")));
  const proc = spawn(process.execPath, [TROUPE_BIN, "gateway"], { env: { ...clean, TROUPE_HOME: home, ...env } });
  let out = "";
  proc.stdout!.on("data", (c: Buffer) => (out += c.toString()));
  proc.stderr!.on("data", (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const m = /troupe gateway on (http:\/\/\S+) /.exec(out);
      if (m) {
        clearInterval(timer);
        resolve(m[1]!);
      }
    }, 25);
    void exited.then(() => {
      clearInterval(timer);
      reject(new Error(`gateway exited before listening:\n${out}`));
    });
  });
  const token = (await readFile(join(home, "gateway.token"), "utf8")).trim();
  return { proc, url, auth: { authorization: `Bearer ${token}` }, exited, output: () => out };
}

/** POSTs a message and ignores the event stream (the process may die while answering). */
export function postMessage(g: GatewayProcess, sessionKey: string, content: string): void {
  void fetch(`${g.url}/api/sessions/${encodeURIComponent(sessionKey)}/messages`, {
    method: "POST",
    headers: { ...g.auth, "content-type": "application/json" },
    body: JSON.stringify({ content }),
  })
    .then((res) => res.text())
    .catch(() => undefined);
}

export async function getJson<T>(g: GatewayProcess, path: string): Promise<T> {
  const res = await fetch(`${g.url}${path}`, { headers: g.auth });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return (await res.json()) as T;
}
