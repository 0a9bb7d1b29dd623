import { filter, firstValueFrom } from "rxjs";
import { afterEach, describe, expect, it } from "vitest";
import type { EventOf } from "../../src/bus/events.js";
import type { Daemon } from "../../src/daemon-types.js";
import { turnDetail } from "../../src/server/turn-view.js";
import { getTurn } from "../../src/store/turns.js";
import { startFakeOpenAi, type FakeOpenAi, type FakeStep } from "../fixtures/fake-openai.js";
import { replyTo, sendApi, startDaemon } from "../helpers/daemon.js";
import { useTempDirs } from "../helpers/tmp.js";

const QUOTA: FakeStep = { status: 429, errorType: "insufficient_quota", errorCode: "insufficient_quota", errorMessage: "You exceeded your current quota, please check your plan and billing details." };

describe("fallback models and quota errors, against fake OpenAI-compatible servers", () => {
  const tmp = useTempDirs();
  const fakes: FakeOpenAi[] = [];
  let daemon: Daemon | undefined;
  afterEach(async () => {
    await daemon?.shutdown();
    daemon = undefined;
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  /** The primary model (providers.custom, "fake-model") and a backup (providers.backup, "backup-model") on two servers. */
  async function start(primary: FakeStep[], backup: FakeStep[], fallbackModels: unknown[] = [{ model: "backup-model", provider: "backup" }]) {
    const [a, b] = [await startFakeOpenAi(primary), await startFakeOpenAi(backup)];
    fakes.push(a, b);
    daemon = await startDaemon(await tmp(), a.url, {
      defaults: { fallbackModels },
      config: { providers: { custom: { apiBase: a.url, apiKey: "ka" }, backup: { apiBase: b.url, apiKey: "kb" } } },
    });
    return { a, b, d: daemon };
  }

  it("a non-retryable failure passes the turn to the fallback, which answers; the turn record and an event say which model did", async () => {
    const { a, b, d } = await start([{ status: 400, errorMessage: "model fake-model does not exist" }], [{ content: "answer from the backup" }]);
    const fellBack = firstValueFrom(d.bus.ofType("model_fallback"));
    const id = await sendApi(d, "fb", "hello");
    const reply = await replyTo(d, id);
    expect(reply.content).toBe("answer from the backup");
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
    expect(b.requests[0]?.body.model).toBe("backup-model");
    expect(b.requests[0]?.headers.authorization).toBe("Bearer kb");
    const event: EventOf<"model_fallback"> = await fellBack;
    expect(event).toMatchObject({ from: "custom/fake-model", to: "backup/backup-model", sessionKey: "api:fb" });
    expect(event.error).toMatch(/HTTP 400 .*model fake-model does not exist/);
    const record = await getTurn(d.store, event.turnId);
    expect(record?.snapshot.context.models).toEqual(["backup/backup-model"]);
    expect((await turnDetail(d.store, event.turnId, (t) => t))?.models).toEqual(["backup/backup-model"]);
  });

  it("a quota error is not retried: the primary gets one request and the fallback answers at once", async () => {
    const { a, b, d } = await start([QUOTA, { content: "never sent" }], [{ content: "the backup had credit" }]);
    const reply = await replyTo(d, await sendApi(d, "quota", "hello"));
    expect(reply.content).toBe("the backup had credit");
    expect([a.requests.length, b.requests.length]).toEqual([1, 1]);
  });

  it("without a fallback, a quota error ends the turn at once with a reply that says so", async () => {
    const { a, d } = await start([QUOTA, { content: "never sent" }], [], []);
    const retried: unknown[] = [];
    d.bus.ofType("model_retry").subscribe((e) => retried.push(e));
    const reply = await replyTo(d, await sendApi(d, "quota2", "hello"));
    expect(reply.content).toMatch(/^Sorry, I could not finish this: model call to custom failed: HTTP 429 from http:\/\/127\.0\.0\.1:\d+\/v1: the account is out of quota or credit \(not retried\)/);
    expect(a.requests).toHaveLength(1);
    expect(retried).toEqual([]);
  });

  it('providerRetryMode "persistent" keeps retrying a failing model past the standard limit, and /stop ends even a long wait at once', async () => {
    // Six quick failures (past the standard mode's 5 attempts), then failures that ask for a 30 s wait.
    const a = await startFakeOpenAi([], (_req, index): FakeStep => ({ status: 503, errorMessage: "overloaded", headers: index < 6 ? { "retry-after-ms": "50" } : { "retry-after": "30" } }));
    fakes.push(a);
    const d = (daemon = await startDaemon(await tmp(), a.url, { defaults: { providerRetryMode: "persistent" } }));
    const longWait = firstValueFrom(d.bus.ofType("model_retry").pipe(filter((e) => e.delayMs >= 30_000)));
    const id = await sendApi(d, "p", "hello");
    const reply = replyTo(d, id);
    expect((await longWait).attempt).toBe(7);
    expect(a.requests).toHaveLength(7);
    const stopped = Date.now();
    await sendApi(d, "p", "/stop");
    expect((await reply).content).toBe("Stopped.");
    expect(Date.now() - stopped).toBeLessThan(15_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(a.requests).toHaveLength(7);
  }, 120_000);

  it("when every model fails, the reply names what each said; a model answering normally is recorded as itself", async () => {
    const { d } = await start([{ status: 401, errorMessage: "bad key" }, { content: "primary is back" }], [{ status: 404, errorMessage: "no such deployment" }]);
    const reply = await replyTo(d, await sendApi(d, "all", "hello"));
    expect(reply.content).toMatch(/every model failed \(2 tried in order\): model call to custom failed: HTTP 401 .*bad key.*; then model call to backup failed: HTTP 404 .*no such deployment/);
    const turnDone = firstValueFrom(d.bus.ofType("turn_state").pipe(filter((e) => e.sessionKey === "api:all2")));
    const next = await replyTo(d, await sendApi(d, "all2", "again"));
    expect(next.content).toBe("primary is back");
    const record = await getTurn(d.store, (await turnDone).turnId);
    expect(record?.snapshot.context.models).toEqual(["custom/fake-model"]);
  });
});
