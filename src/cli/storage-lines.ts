import type { Health } from "./pidfile.js";

/** One line on the store's health as a running gateway reports it, or undefined when it is ok. */
export function storeStateLine(health: Health | undefined): string | undefined {
  const store = health?.store;
  if (!store || store.state === "ok") return undefined;
  if (store.state === "recovering") return "recovering: the store was reopened after a failure; interrupted turns are resuming";
  return `FAILING: ${store.error ?? "the store refuses writes"} (new messages are refused meanwhile)`;
}
