import { fromCallback, fromPromise, type AnyActorLogic } from "xstate";

/**
 * A placeholder for an actor the composition supplies with machine.provide(). Typed as the real
 * logic so the machine's inputs and outputs are checked; fails loudly if it was never provided.
 */
export function notProvided<L extends AnyActorLogic>(machine: string, name: string, kind: "promise" | "callback" = "promise"): L {
  const fail = () => {
    throw new Error(`${machine} machine: actor "${name}" was not provided`);
  };
  return (kind === "promise" ? fromPromise(async () => fail()) : fromCallback(() => fail())) as unknown as L;
}
