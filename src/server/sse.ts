import type { ServerResponse } from "node:http";

/** Opens a server-sent events response. */
export function openSse(res: ServerResponse): { send(event: string, data: unknown): void; comment(text: string): void } {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  res.flushHeaders();
  return {
    send: (event, data) => void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
    comment: (text) => void res.write(`: ${text}\n\n`),
  };
}

export interface SseMessage {
  event: string;
  data: unknown;
}

/** Reads server-sent events from a response body (fetch's, or node:http's), one parsed message at a time. */
export async function* readSse(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) yield { event, data: JSON.parse(data.join("\n")) as unknown };
    }
  }
}
