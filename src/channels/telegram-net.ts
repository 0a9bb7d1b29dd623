import { get as httpGetPlain, type Agent } from "node:http";
import { get as httpsGet } from "node:https";
import { GrammyError, HttpError } from "grammy";
import { proxyAgentFor } from "../proxy-agent.js";

/** How an error of a Bot API call reads to the poller: the HTTP status decides (401 stops, the rest back off). */
export interface TelegramCallError {
  status?: number;
  message: string;
}

/** channels.telegram.proxy ("http://host:port"): every Bot API call and file download goes through it. */
export function proxyAgent(proxy: string | null, apiRoot: string) {
  return proxy ? proxyAgentFor(proxy, apiRoot.startsWith("https:")) : undefined;
}

/** A file download (through the proxy agent when there is one). */
export function httpGet(url: string, agent?: Agent): Promise<Buffer> {
  const get = url.startsWith("https:") ? httpsGet : httpGetPlain;
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`file download answered ${res.statusCode}`));
      }
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve(Buffer.concat(chunks)));
      res.on("error", reject);
    }).on("error", reject);
  });
}

/** grammY's errors as the poller machine reads them. */
export function pollError(err: unknown): TelegramCallError {
  if (err instanceof GrammyError) return { status: err.error_code, message: err.description };
  if (err instanceof HttpError) return { message: `network error: ${String((err.error as Error)?.message ?? err.message)}` };
  return { message: err instanceof Error ? err.message : String(err) };
}

