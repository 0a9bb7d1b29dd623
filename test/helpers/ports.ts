import { createServer } from "node:net";

/** A loopback port nothing listens on (bound, then closed): a server that is down, or a port to give a gateway. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}
