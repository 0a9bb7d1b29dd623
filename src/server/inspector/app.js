// The live inspector page: the actor tree over server-sent events, the selected actor's statechart,
// a session's transcript and turns, a turn's checkpoints and tool journal. Browser script, no imports.
(function () {
  const $ = (sel) => document.querySelector(sel);
  const TOKEN_KEY = "troupe.gatewayToken";
  let token = sessionStorage.getItem(TOKEN_KEY) || "";

  /** Every live actor by id: { id, parentId, kind, machine, state, since, error, restarts }. */
  const actors = new Map();
  /** Last transitions per actor, newest last. */
  const history = new Map();
  /** The last (redacted) snapshot context per actor, from its state events. */
  const contexts = new Map();
  let graphs = null;
  let selected = null;
  let stoppedSelected = null;
  let chart = null;
  let chartFor = null;
  let stream = null;

  const el = (name, props, ...children) => {
    const node = document.createElement(name);
    Object.assign(node, props || {});
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  };
  const ago = (ms) => (ms < 60000 ? Math.max(0, Math.round(ms / 1000)) + " s" : ms < 3600000 ? Math.round(ms / 60000) + " min" : (ms / 3600000).toFixed(1) + " h");
  const time = (at) => new Date(at).toLocaleTimeString();
  const setStatus = (status, text) => {
    $("#status").dataset.status = status;
    $("#status").textContent = text;
  };

  async function api(path) {
    const res = await fetch(path, { headers: { authorization: "Bearer " + token } });
    if (res.status === 401) throw Object.assign(new Error("the token was refused"), { status: 401 });
    if (!res.ok) throw new Error(path + ": " + res.status + " " + ((await res.json().catch(() => ({}))).error || res.statusText));
    return res.json();
  }

  // ---- token ----
  function askToken(message) {
    $("#app").hidden = true;
    $("#sign-out").hidden = true;
    $("#token-form").hidden = false;
    $("#token-error").textContent = message || "";
    setStatus("signed-out", "not connected");
    $("#token").focus();
  }
  $("#token-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    token = $("#token").value.trim();
    await start();
  });
  $("#sign-out").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    token = "";
    if (stream) stream.abort();
    askToken("");
  });

  async function start() {
    if (!token) return askToken("");
    try {
      const [machines, actorsNow] = await Promise.all([api("/api/machines"), api("/api/actors")]);
      graphs = new Map(machines.machines.map((g) => [g.name, g]));
      sessionStorage.setItem(TOKEN_KEY, token);
      $("#token-form").hidden = true;
      $("#app").hidden = false;
      $("#sign-out").hidden = false;
      loadTree(actorsNow.root);
      render();
      connect();
      setInterval(refreshSupervision, 3000);
      setInterval(renderAges, 1000);
    } catch (err) {
      sessionStorage.removeItem(TOKEN_KEY);
      askToken(err.status === 401 ? "That token was refused: copy it again from gateway.token." : "Could not reach troupe: " + err.message);
    }
  }

  // ---- the actor tree ----
  function loadTree(root) {
    actors.clear();
    const walk = (node, parentId) => {
      actors.set(node.id, { id: node.id, parentId, kind: node.kind, machine: node.machine, state: node.state, since: node.since, error: node.error, restarts: node.restarts });
      for (const c of node.children || []) walk(c, node.id);
    };
    if (root) walk(root, null);
  }

  async function refreshSupervision() {
    try {
      const now = await api("/api/actors");
      const seen = new Set();
      const walk = (node, parentId) => {
        seen.add(node.id);
        const a = actors.get(node.id);
        if (a) Object.assign(a, { restarts: node.restarts, error: node.error });
        else if (node.state === "restarting" || node.state === "failed" || node.kind === "subagent") {
          actors.set(node.id, { id: node.id, parentId, kind: node.kind, machine: node.machine, state: node.state, since: node.since, error: node.error, restarts: node.restarts });
        }
        for (const c of node.children || []) walk(c, node.id);
      };
      if (now.root) walk(now.root, null);
      // Entries shown only from this listing (restarting, failed, queued) go when the listing drops them.
      for (const [id, a] of actors) if (!seen.has(id) && (a.state === "restarting" || a.state === "failed" || a.state === "queued")) actors.delete(id);
      render();
    } catch {
      // The event stream says when troupe is gone.
    }
  }

  let renderQueued = false;
  function render() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      renderTree();
      renderSelected();
    });
  }

  const changed = new Set();
  function renderTree() {
    const showEffects = $("#show-effects").checked;
    const children = new Map();
    for (const a of actors.values()) {
      const list = children.get(a.parentId) || [];
      list.push(a);
      children.set(a.parentId, list);
    }
    const build = (a) => {
      const li = el("li", { className: ["state-" + a.state.split(".")[0], a.kind === "effect" ? "effect" : "", a.kind === "effect" && !showEffects ? "hidden-effect" : "", a.id === selected ? "selected" : "", changed.has(a.id) ? "changed" : ""].filter(Boolean).join(" ") });
      li.dataset.actorId = a.id;
      li.dataset.state = a.state;
      li.dataset.kind = a.kind;
      const row = el(
        "div",
        { className: "row", title: a.error || "" },
        el("span", { className: "id", textContent: a.kind === "effect" ? a.id.slice(a.id.lastIndexOf("/") + 1) : a.id }),
        el("span", { className: "kind", textContent: a.machine || a.kind }),
        el("span", { className: "state", textContent: a.state }),
        el("span", { className: "age", textContent: ago(Date.now() - a.since) }),
        a.restarts ? el("span", { className: "restarts", textContent: "↻ " + a.restarts }) : null,
      );
      row.dataset.since = String(a.since);
      row.addEventListener("click", () => select(a.id));
      li.append(row);
      const kids = (children.get(a.id) || []).sort((x, y) => x.id.localeCompare(y.id));
      if (kids.length) li.append(el("ul", {}, ...kids.map(build)));
      return li;
    };
    const roots = (children.get(null) || []).concat([...actors.values()].filter((a) => a.parentId && !actors.has(a.parentId)));
    $("#tree").replaceChildren(...roots.map(build));
    changed.clear();
  }
  $("#show-effects").addEventListener("change", render);

  function renderAges() {
    for (const row of document.querySelectorAll("#tree .row")) {
      const age = row.querySelector(".age");
      if (age) age.textContent = ago(Date.now() - Number(row.dataset.since));
    }
    const a = selectedActor();
    if (a) renderMeta(a);
  }

  // ---- events ----
  async function connect() {
    stream = new AbortController();
    try {
      const res = await fetch("/api/events", { headers: { authorization: "Bearer " + token }, signal: stream.signal });
      if (res.status === 401) return askToken("That token was refused: copy it again from gateway.token.");
      if (!res.ok || !res.body) throw new Error("status " + res.status);
      setStatus("live", "live");
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "message";
          const data = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (data.length) onEvent(event, JSON.parse(data.join("\n")));
        }
      }
    } catch (err) {
      if (stream.signal.aborted) return;
      setStatus("error", "disconnected (" + err.message + "); retrying");
    }
    if (stream.signal.aborted) return;
    setStatus("error", "disconnected; retrying");
    setTimeout(connect, 2000);
  }

  function onEvent(type, e) {
    if (type === "tree") {
      loadTree(e);
      return render();
    }
    if (type === "actor_spawned") {
      actors.set(e.actorId, { id: e.actorId, parentId: e.parentId, kind: e.kind, machine: e.machine, state: e.state || "starting", since: e.at });
    } else if (type === "actor_stopped") {
      // The selected actor stays on show, as it was when it stopped.
      const gone = actors.get(e.actorId);
      if (e.actorId === selected && gone) stoppedSelected = Object.assign({}, gone, { stopped: true });
      actors.delete(e.actorId);
    } else if (type === "actor_state") {
      const a = actors.get(e.actorId) || { id: e.actorId, parentId: e.parentId, kind: e.kind, machine: e.machine };
      Object.assign(a, { state: e.state, since: e.at, error: e.error || a.error });
      actors.set(e.actorId, a);
      if (e.snapshot && e.snapshot.context) contexts.set(e.actorId, e.snapshot.context);
      const list = history.get(e.actorId) || [];
      list.push({ from: e.from, to: e.state, event: e.event, at: e.at });
      if (list.length > 50) list.shift();
      history.set(e.actorId, list);
      changed.add(e.actorId);
      if (e.actorId === selected) onSelectedChange(e);
    } else return;
    render();
  }

  // ---- the selected actor ----
  function select(id) {
    selected = id;
    stoppedSelected = null;
    chartFor = null;
    turnView = null;
    render();
    const a = actors.get(id);
    $("#session").hidden = true;
    $("#turn").hidden = true;
    if (a && a.kind === "session") loadSession(id.slice("session:".length));
    if (a && (a.kind === "turn" || a.kind === "subagent")) loadTurnOf(a);
  }

  function renderMeta(a) {
    const parts = [a.machine ? "machine " + a.machine : "kind " + a.kind, "state " + a.state, "for " + ago(Date.now() - a.since)];
    if (a.restarts) parts.push("restarted " + a.restarts + " time(s)");
    if (a.error) parts.push("error: " + a.error);
    if (a.stopped) parts.push("stopped");
    $("#actor-meta").textContent = parts.join(" · ");
  }

  const selectedActor = () => (selected && (actors.get(selected) || (stoppedSelected && stoppedSelected.id === selected ? stoppedSelected : null))) || null;

  async function renderSelected() {
    const a = selectedActor();
    $("#hint").hidden = Boolean(a);
    $("#actor").hidden = !a;
    if (!a) return;
    $("#actor-id").textContent = a.id;
    renderMeta(a);
    $("#transitions").replaceChildren(...(history.get(a.id) || []).slice().reverse().map((t) => el("li", { textContent: time(t.at) + "  " + (t.from || "?") + " → " + t.to + (t.event ? "  (" + t.event + ")" : "") })));
    const graph = a.machine && graphs.get(a.machine);
    if (!graph) {
      $("#chart").replaceChildren(el("p", { className: "small", textContent: "This actor is not a state machine (" + a.kind + ")." }));
      chart = null;
      chartFor = a.id;
      return;
    }
    if (chartFor === a.id) {
      if (chart) chart.highlight(window.troupeStatechart.activeIds(graph, a.state));
      return;
    }
    // One drawing per selection; the state it shows is the one current when the layout is done.
    chartFor = a.id;
    chart = null;
    const drawn = await window.troupeStatechart.draw(graph, $("#chart"), []);
    if (chartFor !== a.id) return;
    chart = drawn;
    const now = selectedActor();
    chart.highlight(window.troupeStatechart.activeIds(graph, now ? now.state : a.state));
  }

  function onSelectedChange(e) {
    const a = actors.get(e.actorId);
    const graph = a && a.machine && graphs.get(a.machine);
    if (chart && graph) {
      chart.highlight(window.troupeStatechart.activeIds(graph, e.state));
      const ids = (v) => window.troupeStatechart.activeIds(graph, v);
      chart.flash(ids(e.from).slice(-1)[0], ids(e.state).slice(-1)[0]);
    }
    if (a && a.kind === "session" && e.state === "idle") loadSession(a.id.slice("session:".length));
    if (a && (a.kind === "turn" || a.kind === "subagent")) loadTurnOf(a);
  }

  // ---- a session ----
  async function loadSession(key) {
    const s = await api("/api/sessions/" + encodeURIComponent(key)).catch(() => null);
    if (!s || selected !== "session:" + key) return;
    $("#session").hidden = false;
    $("#turns tbody").replaceChildren(
      ...s.turns
        .slice()
        .sort((x, y) => y.createdAt - x.createdAt)
        .map((t) => {
          const tr = el("tr", { className: "clickable" }, el("td", { textContent: t.turnId }), el("td", { textContent: t.state }), el("td", { textContent: time(t.createdAt) }), el("td", { textContent: String(t.resumes) }));
          tr.addEventListener("click", () => loadTurn(t.turnId));
          return tr;
        }),
    );
    $("#transcript").replaceChildren(
      ...s.messages.map((m) => {
        const text = typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.map((p) => p.text || "[" + p.type + "]").join(" ") : "";
        const calls = (m.tool_calls || []).map((c) => "→ " + (c.function ? c.function.name : c.name)).join(" ");
        return el("div", { className: "msg " + m.role }, el("span", { className: "role", textContent: m.role + (m.name ? " " + m.name : "") + (m.at ? " · " + time(m.at) : "") }), (text || "") + (calls ? (text ? "\n" : "") + calls : ""));
      }),
    );
  }

  // ---- a turn ----
  let turnView = null;
  function loadTurnOf(a) {
    const ctx = contexts.get(a.id);
    const turnId = (ctx && ctx.turnId) || (a.kind === "turn" ? a.id.slice(a.id.lastIndexOf(":") + 1) : null);
    if (turnId) loadTurn(turnId);
  }

  async function loadTurn(turnId) {
    const t = await api("/api/turns/" + encodeURIComponent(turnId)).catch(() => null);
    if (!t) return;
    const step = turnView && turnView.turn.turnId === turnId && turnView.step < turnView.turn.checkpoints.length - 1 ? turnView.step : t.checkpoints.length - 1;
    turnView = { turn: t, step, chart: turnView && turnView.turn.turnId === turnId ? turnView.chart : null };
    $("#turn").hidden = false;
    $("#turn-title").textContent = "Turn " + t.turnId;
    const usage = t.usage ? t.usage.totalTokens + " tokens (" + t.usage.promptTokens + " in, " + t.usage.completionTokens + " out)" : "";
    $("#turn-meta").textContent = [t.sessionKey, t.state, "iteration " + t.iteration, usage, t.resumes ? "resumed " + t.resumes + "×" : "", t.error ? "error: " + t.error : ""].filter(Boolean).join(" · ");
    $("#tools tbody").replaceChildren(
      ...t.tools.map((c) =>
        el(
          "tr",
          {},
          el("td", { textContent: c.iteration + ":" + c.index }),
          el("td", { textContent: c.name }),
          el("td", { textContent: c.hint }),
          el("td", { className: "status-" + c.status, textContent: c.status }),
          el("td", { textContent: c.durationMs === null ? "" : c.durationMs + " ms" }),
          el("td", { textContent: c.resultPreview || "" }),
        ),
      ),
    );
    if (!turnView.chart) turnView.chart = await window.troupeStatechart.draw(graphs.get("turn"), $("#turn-chart"), []);
    renderStep();
  }

  function renderStep() {
    if (!turnView) return;
    const { turn, step } = turnView;
    const rows = turn.checkpoints.map((c, i) => {
      const tr = el(
        "tr",
        { className: "clickable" + (i === step ? " step" : "") },
        el("td", { textContent: String(c.seq) }),
        el("td", { textContent: c.state }),
        el("td", { textContent: String(c.iteration) }),
        el("td", { textContent: time(c.at) }),
        el("td", { textContent: c.durationMs === null ? "" : c.durationMs + " ms" }),
        el("td", { textContent: c.tokens === null ? "" : c.tokens + (c.tokensAdded ? " (+" + c.tokensAdded + ")" : "") }),
      );
      tr.addEventListener("click", () => {
        turnView.step = i;
        renderStep();
      });
      return tr;
    });
    $("#checkpoints tbody").replaceChildren(...rows);
    const c = turn.checkpoints[step];
    $("#step-label").textContent = c ? "checkpoint " + (step + 1) + " of " + turn.checkpoints.length + ": seq " + c.seq + ", " + c.state + " at " + time(c.at) : "no checkpoints";
    if (turnView.chart && c) turnView.chart.highlight(window.troupeStatechart.activeIds(graphs.get("turn"), c.state));
  }
  $("#step-prev").addEventListener("click", () => {
    if (turnView && turnView.step > 0) turnView.step--;
    renderStep();
  });
  $("#step-next").addEventListener("click", () => {
    if (turnView && turnView.step < turnView.turn.checkpoints.length - 1) turnView.step++;
    renderStep();
  });

  start();
})();
