/**
 * The store's growth per turn (part of `npm run bench`), so the free-space floor
 * (storage.freeSpaceFloorMB / freeSpaceFloorPercent) can be reasoned about: how many turns the
 * floor leaves room for. Turns are those of the durability bench (2 model calls, 1 tool call).
 */
import { rm } from "node:fs/promises";
import { storeSize } from "../../src/store/repair.js";
import { burst, daemonFor, fakeModel } from "./harness.js";

const MB = 1024 * 1024;
const model = await fakeModel(0);
const { daemon, dir } = await daemonFor(model.url, { maxConcurrentTurns: 10 });
await burst(daemon, ["warm-up"]);
const before = await storeSize(daemon.store.path);
const sessions = 10;
const total = 500;
for (let done = 0; done < total; done += sessions) await burst(daemon, Array.from({ length: sessions }, (_, i) => `s${i}`));
const after = await storeSize(daemon.store.path);
await daemon.shutdown();
const closed = await storeSize(daemon.store.path);
await rm(dir, { recursive: true, force: true });
model.stop();

const perTurn = (after - before) / total;
console.log("## store growth per turn (2 model calls, 1 tool call, a short message)");
console.log(`${total} turns in ${sessions} sessions: ${((after - before) / 1024).toFixed(0)} KB on disk while running (${(perTurn / 1024).toFixed(1)} KB/turn), ${(closed / 1024).toFixed(0)} KB after close`);
console.log(`the default floor (200 MB) leaves room for about ${Math.floor((200 * MB) / perTurn).toLocaleString("en")} such turns before the disk is full`);
