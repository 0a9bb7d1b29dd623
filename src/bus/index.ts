export * from "./events.js";
export * from "./bus.js";
