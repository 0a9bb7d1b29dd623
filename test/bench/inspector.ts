/**
 * A minimal client of a Node process's inspector (the DevTools protocol over a WebSocket): the soak
 * bench starts its gateway with `--inspect=127.0.0.1:0` and asks it for a full collection and the
 * heap's size at a quiet moment, which no API of the gateway offers (and should not).
 * Node 20's WebSocket needs `--experimental-websocket` (scripts/bench.mjs passes it to the soak).
 */

/** The inspector's WebSocket URL from the process's stderr ("Debugger listening on ws://…"). */
export const inspectorUrl = (output: string): string | undefined => /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];

export interface InspectorClient {
  call<T = unknown>(method: string, params?: Record<string, unknown>): Promise<T>;
  close(): void;
}

export async function connectInspector(url: string): Promise<InspectorClient> {
  if (typeof WebSocket === "undefined") throw new Error("no WebSocket in this Node: run with --experimental-websocket (npm run bench:soak does)");
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener("open", () => resolve(), { once: true });
    ws.addEventListener("error", () => reject(new Error(`could not connect to the inspector at ${url}`)), { once: true });
  });
  let id = 0;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener("message", (e: MessageEvent) => {
    const msg = JSON.parse(String(e.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = msg.id === undefined ? undefined : waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id!);
    if (msg.error) w.reject(new Error(msg.error.message));
    else w.resolve(msg.result);
  });
  ws.addEventListener("close", () => {
    for (const w of waiting.values()) w.reject(new Error("the inspector connection closed"));
    waiting.clear();
  });
  return {
    call<T>(method: string, params: Record<string, unknown> = {}) {
      const n = ++id;
      return new Promise<T>((resolve, reject) => {
        waiting.set(n, { resolve: resolve as (v: unknown) => void, reject });
        ws.send(JSON.stringify({ id: n, method, params }));
      });
    },
    close: () => ws.close(),
  };
}
