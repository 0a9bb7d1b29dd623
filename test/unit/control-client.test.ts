import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { controlClient, DaemonGoneError } from "../../src/cli/client.js";
import { TroupeError } from "../../src/errors.js";

/** A control API that answers every request with one status and body. */
async function answering(status: number, body: unknown): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, server };
}

describe("control client: what a 503 means", () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it("a daemon shutting down (503 without retry: later) is gone: the CLI waits for it to come back", async () => {
    const a = await answering(503, { error: "troupe is shutting down; try again in a moment" });
    server = a.server;
    await expect(controlClient(a.url, 1, "t").get("/api/sessions")).rejects.toBeInstanceOf(DaemonGoneError);
  });

  it("a store that is failing (503 with retry: later) is the daemon's answer, said at once, not a daemon that went away", async () => {
    const a = await answering(503, { error: "the store is failing (an I/O error); nothing was accepted", retry: "later" });
    server = a.server;
    const err = await controlClient(a.url, 1, "t").get("/api/sessions").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TroupeError);
    expect(err).not.toBeInstanceOf(DaemonGoneError);
    expect((err as Error).message).toContain("the store is failing");
  });
});
