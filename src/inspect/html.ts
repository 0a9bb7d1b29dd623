import { inlineScript, inspectorAsset } from "../server/inspector/assets.js";
import type { MachineGraph } from "./graph.js";

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);

/** A standalone page (one file, everything inline, works offline) that draws the machines. */
export async function graphsHtml(graphs: MachineGraph[]): Promise<string> {
  const asset = async (name: string) => (await inspectorAsset(name))!.body;
  const sections = graphs
    .map((g) => `<section><h2>${escapeHtml(g.name)}</h2><p class="events">events: ${escapeHtml(g.events.join(", ") || "(none)")}</p><div class="chart" data-machine="${escapeHtml(g.name)}"></div></section>`)
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>troupe machines</title>
<style>body{font:14px system-ui,sans-serif;margin:24px;color:#111827}h2{margin:24px 0 4px}.events{color:#4b5563;margin:0 0 8px}
${await asset("statechart.css")}</style></head>
<body><h1>troupe machines</h1>
${sections}
<script>${inlineScript(await asset("elk.bundled.js"))}</script>
<script>${inlineScript(await asset("statechart.js"))}</script>
<script>
const graphs = ${inlineScript(JSON.stringify(graphs))};
(async () => {
  for (const g of graphs) await window.troupeStatechart.draw(g, document.querySelector('.chart[data-machine="' + g.name + '"]'), []);
  document.body.dataset.drawn = "true";
})();
</script></body></html>
`;
}
