// Draws a machine graph (src/inspect/graph.ts) as SVG: layout by elkjs (ELK, loaded before this
// script), nested states as nested boxes, the active states highlighted. Browser script, no imports.
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const charW = 7;
  const textW = (text) => Math.ceil(String(text).length * charW) + 16;

  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (parent) parent.appendChild(node);
    return node;
  }

  const local = (graph, id) => (id.startsWith(graph.id + ".") ? id.slice(graph.id.length + 1) : id);

  /** The ELK graph: states as (nested) nodes, an initial dot per level, transitions with a target as edges. */
  function elkGraph(graph) {
    const byParent = new Map();
    for (const s of graph.states) {
      const list = byParent.get(s.parent) || [];
      list.push(s);
      byParent.set(s.parent, list);
    }
    const edges = [];
    const nodesOf = (parent, initial) => {
      const nodes = [];
      if (initial) {
        const dot = "__initial__" + (parent || "root");
        nodes.push({ id: dot, width: 12, height: 12, initialDot: true });
        edges.push({ id: "e_" + dot, sources: [dot], targets: [initial], labels: [] });
      }
      for (const s of byParent.get(parent) || []) {
        const children = byParent.get(s.id) || [];
        const label = s.key + (s.invokes.length ? "  ⟳ " + s.invokes.join(", ") : "");
        const node = { id: s.id, state: s, labels: [{ text: label, width: textW(label), height: 16 }] };
        if (children.length) {
          node.children = nodesOf(s.id, s.initial);
          node.layoutOptions = { "elk.padding": "[top=30,left=14,bottom=14,right=14]", "elk.nodeLabels.placement": "INSIDE V_TOP H_LEFT" };
        } else {
          node.width = textW(label);
          node.height = 34;
        }
        nodes.push(node);
      }
      return nodes;
    };
    const children = nodesOf(null, graph.initial);
    graph.transitions.forEach((t, i) => {
      if (!t.target || t.source === graph.id) return;
      const text = t.event + (t.guard ? " [" + t.guard + "]" : "");
      edges.push({ id: "t" + i, sources: [t.source], targets: [t.target], labels: [{ text, width: textW(text) - 8, height: 14 }], transition: t });
    });
    return {
      id: "root",
      layoutOptions: {
        "elk.algorithm": "layered",
        "elk.direction": "DOWN",
        "elk.hierarchyHandling": "INCLUDE_CHILDREN",
        "elk.layered.spacing.nodeNodeBetweenLayers": "40",
        "elk.spacing.nodeNode": "30",
        "elk.spacing.edgeLabel": "4",
        "elk.edgeLabels.inline": "false",
        "org.eclipse.elk.json.edgeCoords": "ROOT",
        "org.eclipse.elk.json.shapeCoords": "ROOT",
      },
      children,
      edges,
    };
  }

  let elk;
  /**
   * Lays the graph out and draws it into `container` (replacing what was there). `active` is the
   * list of state ids the actor is in (leaf and ancestors). Returns a handle to re-highlight.
   */
  async function draw(graph, container, active) {
    elk = elk || new ELK();
    const laid = await elk.layout(elkGraph(graph));
    container.textContent = "";
    const width = Math.ceil(laid.width || 100) + 20;
    const height = Math.ceil(laid.height || 100) + 20;
    const svg = el("svg", { xmlns: SVG, viewBox: `-10 -10 ${width} ${height}`, width, height, class: "statechart", "data-machine": graph.name }, container);
    const defs = el("defs", {}, svg);
    const marker = el("marker", { id: "arrow-" + graph.name, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }, marker);
    const nodesLayer = el("g", { class: "nodes" }, svg);
    const edgesLayer = el("g", { class: "edges" }, svg);
    const stateEls = new Map();
    const visit = (nodes) => {
      for (const n of nodes || []) {
        if (n.initialDot) {
          el("circle", { cx: n.x + 6, cy: n.y + 6, r: 6, class: "initial" }, nodesLayer);
          continue;
        }
        const s = n.state;
        const g = el("g", { class: "state" + (n.children ? " compound" : "") + (s.type === "final" ? " final" : ""), "data-state": local(graph, s.id) }, nodesLayer);
        el("rect", { x: n.x, y: n.y, width: n.width, height: n.height, rx: 8, ry: 8 }, g);
        if (s.type === "final") el("rect", { x: n.x + 3, y: n.y + 3, width: n.width - 6, height: n.height - 6, rx: 6, ry: 6, class: "inner" }, g);
        const label = el("text", { x: n.x + 8, y: n.children ? n.y + 18 : n.y + n.height / 2 + 4 }, g);
        label.textContent = n.labels[0].text;
        el("title", {}, g).textContent = local(graph, s.id);
        stateEls.set(s.id, g);
        visit(n.children);
      }
    };
    visit(laid.children);
    const edgeEls = [];
    const drawEdges = (container) => {
      for (const e of container.edges || []) {
        const g = el("g", { class: "transition", "data-event": e.transition ? e.transition.event : "initial" }, edgesLayer);
        for (const sec of e.sections || []) {
          const pts = [sec.startPoint, ...(sec.bendPoints || []), sec.endPoint];
          el("path", { d: "M " + pts.map((p) => p.x + " " + p.y).join(" L "), "marker-end": `url(#arrow-${graph.name})` }, g);
        }
        for (const l of e.labels || []) {
          if (l.x === undefined) continue;
          const t = el("text", { x: l.x, y: l.y + 11, class: "edge-label" }, g);
          t.textContent = l.text;
        }
        if (e.transition) edgeEls.push({ g, transition: e.transition });
      }
      for (const c of container.children || []) drawEdges(c);
    };
    drawEdges(laid);
    const handle = {
      svg,
      /** Highlights the active states; the leaf gets the strongest mark. */
      highlight(ids) {
        for (const [id, g] of stateEls) {
          g.classList.toggle("active", ids.includes(id));
          g.classList.toggle("current", ids[ids.length - 1] === id);
        }
        svg.setAttribute("data-current", ids.length ? local(graph, ids[ids.length - 1]) : "");
      },
      /** Flashes the transitions from `from` to `to` (a state change just seen). */
      flash(from, to) {
        for (const { g, transition } of edgeEls) {
          if (transition.target === to && (!from || from.startsWith(transition.source) || transition.source.startsWith(from))) {
            g.classList.remove("flash");
            void g.getBBox();
            g.classList.add("flash");
          }
        }
      },
    };
    handle.highlight(active || []);
    return handle;
  }

  /** The state ids an actor is in, from its state value as a dotted string ("active.running"). */
  function activeIds(graph, value) {
    if (!value) return [];
    const parts = String(value).split(",")[0].split(".");
    const ids = [];
    for (let i = 1; i <= parts.length; i++) {
      const id = graph.id + "." + parts.slice(0, i).join(".");
      if (graph.states.some((s) => s.id === id)) ids.push(id);
    }
    return ids;
  }

  window.troupeStatechart = { draw, activeIds };
})();
