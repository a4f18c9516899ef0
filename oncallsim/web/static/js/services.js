// A chain of services (a run with a [graph], docs/graphs.md). The diagram draws the chain: a box per service, in
// columns by its distance from the entry, an arrow per call; an arrow's width follows the attempts a second its
// callee received, its colour the share of them that failed, and each box says its numbers in words (colour never
// carries the meaning alone). The services' panel sets each service's policy during the run: the same
// ``<service>.<setting>`` controls the API, the CLI's actions files and the rooms take (model/chain/controls.py
// checks them; this page only sends what the operator typed and shows what is in force).
// One piece of code for the console and a game-day room: the page draws each minute with ``window.services.show``,
// tells it the run's state with the ``oncallsim:state`` event (``readonly``: a seat that may not act), and sends
// what it asks for with the ``oncallsim:act`` event ({control, value}) its own way (the console's socket, the
// room's).
(function () {
  "use strict";
  const { t, number, percent } = window.i18n;
  const svg = document.getElementById("diagram");
  if (!svg || !svg.dataset.graph) return;
  const graph = JSON.parse(svg.dataset.graph);
  const NS = "http://www.w3.org/2000/svg";
  const BOX_W = 184;
  const BOX_H = 68;
  const GAP_X = 64;
  const GAP_Y = 12;
  const LABELS = { // each setting's words (the catalog's keys written out: the i18n check reads them)
    timeout_ms: t("service.timeout_ms"),
    retries: t("service.retries"),
    retry_budget: t("service.retry_budget"),
    hedge_after_quantile: t("service.hedge_after_quantile"),
    instances: t("service.instances"),
    breaker_k: t("service.breaker_k"),
    max_queue: t("service.max_queue"),
    limiter: t("service.limiter"),
    lifo: t("service.lifo"),
  };
  // the settings a service takes, as the server lists them (model/chain/controls.py SERVICE_SETTINGS), in the
  // order read above (the page's JSON sorts its keys)
  const SETTINGS = Object.keys(LABELS).filter((setting) => graph.settings[setting]);
  const BALANCED = { // a balanced service's words (its balancer is the file's: shown, not set here)
    random: t("balancer.random"),
    "round-robin": t("balancer.round_robin"),
    "least-outstanding": t("balancer.least_outstanding"),
  };
  const byName = Object.fromEntries(graph.services.map((s) => [s.name, s]));

  // ---- the diagram's layout: a column per distance from the entry (the longest path: a graph has no cycle) ------
  const depth = {};
  function visit(name, d) {
    if (depth[name] !== undefined && depth[name] >= d) return;
    depth[name] = d;
    for (const call of byName[name].calls) visit(call.to, d + 1);
  }
  visit(graph.entry, 0);
  const columns = [];
  for (const s of graph.services) (columns[depth[s.name]] = columns[depth[s.name]] || []).push(s.name);
  const rows = Math.max(...columns.map((c) => c.length));
  // Two ways to lay it out. Side by side (the calls run left to right): a column per distance from the entry, as
  // wide as the chain is deep. Stacked (the calls run downwards, as a call stack reads): a row per distance, as wide
  // as its widest row. A phone too narrow for the columns at 80 % of their size (three columns: 544 px) gets the
  // rows, which fit it whole instead of scrolling sideways; the columns everywhere else.
  const GAP_ROWS = 30; // room between two rows for the arrow and the how of the call beside it
  const wide = { width: columns.length * (BOX_W + GAP_X) - GAP_X + 4, height: rows * (BOX_H + GAP_Y) - GAP_Y + 4 };
  const tall = { width: rows * (BOX_W + GAP_Y) - GAP_Y + 4, height: columns.length * (BOX_H + GAP_ROWS) - GAP_ROWS + 4 };
  const at = {};

  function el(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const set = (node, attrs) => { for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v)); };

  const edges = []; // [caller, callee, line, the how of the call (a text) or null]
  for (const s of graph.services) {
    const seen = new Set();
    for (const call of s.calls) {
      if (seen.has(call.to)) continue;
      seen.add(call.to);
      const line = el("line", { "data-edge": s.name + ">" + call.to, "data-level": "calm" });
      svg.append(line);
      // how the call is made: on some requests (a share), or as several copies at once (fan-out)
      const how = call.probability !== null ? percent(call.probability) : call.copies > 1 ? "×" + number(call.copies) : "";
      const label = how ? el("text", { class: "call-how" }, how) : null;
      if (label) svg.append(label);
      edges.push([s.name, call.to, line, label]);
    }
  }
  const boxes = {};
  for (const s of graph.services) {
    const g = el("g", { "data-service": s.name, "data-level": "calm" });
    const rect = el("rect", { width: BOX_W, height: BOX_H, rx: 6 });
    const name = el("text", {}, s.name === graph.entry ? t("graph.entry", { name: s.name }) : s.name);
    const rate = el("text", { class: "value" });
    const use = el("text", { class: "value" });
    const failing = el("text", { class: "value failing" });
    g.append(rect, name, rate, use, failing);
    svg.append(g);
    boxes[s.name] = { g, rect, name, rate, use, failing };
  }

  // Places the boxes and the arrows side by side (``stacked`` false) or in rows, and sizes the drawing.
  function place(stacked) {
    const size = stacked ? tall : wide;
    const gapAlong = stacked ? GAP_ROWS : GAP_X;
    columns.forEach((names, d) => {
      const across = stacked ? (rows - names.length) * (BOX_W + GAP_Y) / 2 : ((rows - names.length) * (BOX_H + GAP_Y)) / 2; // a short column centred beside a tall one
      names.forEach((name, i) => {
        const along = 2 + d * ((stacked ? BOX_H : BOX_W) + gapAlong);
        const side = 2 + across + i * ((stacked ? BOX_W : BOX_H) + GAP_Y);
        at[name] = stacked ? { x: side, y: along } : { x: along, y: side };
      });
    });
    for (const [caller, callee, line, label] of edges) {
      const a = at[caller];
      const b = at[callee];
      const end = stacked
        ? { x1: a.x + BOX_W / 2, y1: a.y + BOX_H, x2: b.x + BOX_W / 2, y2: b.y - 4 }
        : { x1: a.x + BOX_W, y1: a.y + BOX_H / 2, x2: b.x - 4, y2: b.y + BOX_H / 2 };
      set(line, end);
      if (label) {
        const mid = { x: (end.x1 + end.x2) / 2, y: (end.y1 + end.y2) / 2 };
        // stacked: beside a straight arrow, or above a slanted one on the side it leans to (clear of its line)
        const dx = end.x2 - end.x1;
        const spot = !stacked ? { x: mid.x, y: mid.y - 5, anchor: "" }
          : Math.abs(dx) < 1 ? { x: mid.x + 6, y: mid.y + 4, anchor: "start" }
          : { x: mid.x + (dx > 0 ? 4 : -4), y: mid.y - 6, anchor: dx > 0 ? "start" : "end" };
        set(label, { x: spot.x, y: spot.y });
        label.style.textAnchor = spot.anchor;
      }
    }
    for (const [name, box] of Object.entries(boxes)) {
      const { x, y } = at[name];
      set(box.rect, { x, y });
      [box.name, box.rate, box.use, box.failing].forEach((text, i) => set(text, { x: x + BOX_W / 2, y: y + [16, 32, 47, 62][i] }));
    }
    svg.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`);
    svg.dataset.layout = stacked ? "rows" : "columns";
    if (stacked) {
      // as tall as its rows at their size, or smaller by as much as a row too wide for the phone is shrunk
      const room = svg.parentElement.clientWidth;
      svg.style.height = Math.round(size.height * Math.min(1, room / size.width)) + "px";
    } else {
      svg.style.height = Math.min(280, size.height) + "px"; // the chain scaled into the charts' width, never over them
    }
    // on a phone it shrinks to 80 % of its size at most (its text still readable), then scrolls sideways: a chain of
    // two columns fits 390 px whole (the one service's 600 px floor hid the cascade's recs off the screen)
    svg.style.minWidth = Math.round(size.width * 0.8) + "px";
  }

  // the columns while they fit at 80 % of their size, else the rows; again when the window's width changes
  let stacked = null;
  function fit() {
    svg.style.minWidth = "0px"; // the room measured without the drawing's own floor
    const want = svg.parentElement.clientWidth < Math.round(wide.width * 0.8) && tall.width < wide.width;
    if (want !== stacked) {
      stacked = want;
      place(stacked);
    } else {
      svg.style.minWidth = Math.round((stacked ? tall : wide).width * 0.8) + "px";
      if (stacked) place(true); // its height follows the room
    }
  }
  fit();
  window.addEventListener("resize", fit);

  function level(x, warm, hot) {
    if (x >= hot) return "hot";
    if (x >= warm) return "warm";
    return "calm";
  }

  function show(r) {
    const measured = r.extras && r.extras.graph;
    if (!measured) return;
    const m = measured.services;
    const scale = Math.max(1, ...Object.values(m).map((x) => x.attempts_per_s));
    for (const [, callee, line] of edges) {
      const x = m[callee];
      const failed = x.attempts_per_s > 0 ? (x.failed_per_s + x.refused_per_s) / x.attempts_per_s : 0;
      line.setAttribute("stroke-width", String(Math.max(1.5, Math.min(14, (14 * x.attempts_per_s) / scale))));
      line.dataset.level = level(failed, 0.01, 0.1);
      line.dataset.failed = failed.toFixed(4);
    }
    for (const [name, box] of Object.entries(boxes)) {
      const x = m[name];
      const p99 = x.p99_ms === null ? "—" : x.p99_ms < 10000 ? t("unit.ms", { n: number(Math.round(x.p99_ms)) }) : t("unit.seconds", { n: number(Math.round(x.p99_ms / 1000)) });
      box.rate.textContent = t("graph.rate", { n: number(Math.round(x.attempts_per_s)), p99 });
      box.use.textContent = t("graph.use", { busy: percent(x.utilization), queue: number(x.queue) });
      const failed = x.attempts_per_s > 0 ? (x.failed_per_s + x.refused_per_s) / x.attempts_per_s : 0;
      // the failures in words (the colour says it too): the share of its attempts that failed, and the clients'
      // failed requests whose failure began here (the debrief's "Where the failures began", minute by minute); what
      // would read "0% failed · 0/s" is left unsaid
      const begun = x.failures_begun_per_s || 0;
      box.failing.textContent = failed >= 0.005 || begun >= 0.5 ? t("graph.failing", { failed: percent(failed), begun: number(Math.round(begun)) }) : "";
      box.g.dataset.begun = begun.toFixed(2);
      // slow is a symptom too: a p99 past the clients' deadline (hot) or past half of it (warm), even while the
      // service neither fails nor fills (a slow leaf whose callers wait on it)
      const slow = x.p99_ms === null ? 0 : x.p99_ms / graph.deadline_ms;
      box.g.dataset.level = failed >= 0.1 || x.utilization >= 0.99 || slow >= 1 ? "hot" : failed >= 0.01 || x.utilization >= 0.8 || slow >= 0.5 ? "warm" : "calm";
    }
  }

  // ---- the services' panel: a row per service, an input per setting, applied together ------------------------
  const body = document.getElementById("services-body");
  const dirty = new Set(); // inputs the operator typed into: kept until applied or abandoned (Escape)
  const inputs = {}; // control name → input
  const panel = document.createDocumentFragment();
  for (const s of graph.services) {
    // a service: its settings as labelled boxes in a grid (narrow enough for the side column and a phone)
    const box = document.createElement("fieldset");
    box.className = "service";
    box.dataset.service = s.name;
    const legend = document.createElement("legend");
    legend.textContent = s.name === graph.entry ? t("graph.entry", { name: s.name }) : s.name;
    box.append(legend);
    if (BALANCED[s.balancer]) { // a queue per instance: the queue limit below is each instance's
      const note = document.createElement("p");
      note.className = "service-balancer";
      note.dataset.balancer = s.balancer;
      note.textContent = t("service.balanced", { balancer: BALANCED[s.balancer] });
      box.append(note);
    }
    const grid = document.createElement("div");
    grid.className = "service-grid";
    for (const setting of SETTINGS) {
      const spec = graph.settings[setting];
      const name = s.name + "." + setting;
      const label = document.createElement("label");
      label.textContent = LABELS[setting] + " ";
      const input = document.createElement("input");
      input.id = "c-" + name;
      input.name = name;
      if (spec.switch) { // 0 or 1: a box to tick (Space), applied with the others
        input.type = "checkbox";
        label.className = "switch";
      } else {
        input.type = "number";
        input.min = spec.off ? "0" : String(spec.min);
        input.max = String(spec.max);
        input.step = spec.whole || setting === "timeout_ms" ? "1" : "any";
      }
      input.dataset.label = s.name + ": " + LABELS[setting];
      input.dataset.kind = setting === "retry_budget" ? "fraction" : "service";
      if (setting === "timeout_ms") input.dataset.unit = "ms";
      if (setting === "instances") input.dataset.unit = "instances";
      const entryOwn = s.name === graph.entry && (setting === "instances" || setting === "timeout_ms");
      if (entryOwn) {
        input.disabled = true;
        input.dataset.fixed = "true";
        input.title = setting === "instances" ? t("service.entry_fleet") : t("service.entry_deadline");
      }
      input.addEventListener("input", () => dirty.add(name));
      input.addEventListener("keydown", (e) => {
        if (e.key === "Enter") { e.preventDefault(); apply(s.name); }
        if (e.key === "Escape") { // abandons what was typed, and leaves the box: Space pauses again, as elsewhere
          input.blur(); // first: the in-force value is not written into the box that has the focus
          if (dirty.delete(name) && inForce) fill(inForce);
        }
      });
      inputs[name] = input;
      label.append(input);
      grid.append(label);
    }
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = t("service.apply");
    button.setAttribute("aria-label", t("service.apply_to", { name: s.name }));
    button.dataset.applies = s.name;
    button.addEventListener("click", () => apply(s.name));
    grid.append(button);
    box.append(grid);
    panel.append(box);
  }
  if (body) body.append(panel);

  let inForce = null;

  function apply(service) {
    for (const setting of SETTINGS) {
      const name = service + "." + setting;
      const input = inputs[name];
      if (!dirty.has(name) || input.disabled) continue;
      dirty.delete(name);
      if (input.type === "checkbox") {
        document.dispatchEvent(new CustomEvent("oncallsim:act", { detail: { control: name, value: input.checked ? 1 : 0 } }));
        continue;
      }
      const value = Number(input.value);
      if (input.value.trim() === "" || !Number.isFinite(value)) continue; // an empty box: nothing asked for
      // sent as typed: a whole setting's 2.5 is the server's to refuse (naming the range), never rounded here
      document.dispatchEvent(new CustomEvent("oncallsim:act", { detail: { control: name, value } }));
    }
  }

  function fill(services) {
    for (const [service, settings] of Object.entries(services)) {
      for (const [setting, value] of Object.entries(settings)) {
        const name = service + "." + setting;
        const input = inputs[name];
        if (!input || dirty.has(name) || document.activeElement === input) continue;
        // the entry's timeout is its clients' deadline (the file's [graph] deadline_ms)
        if (input.type === "checkbox") {
          input.checked = value === 1;
          continue;
        }
        const shown = service === graph.entry && setting === "timeout_ms" ? graph.deadline_ms : value;
        input.value = String(Number(shown.toFixed(4)));
      }
    }
  }

  // a setting the server refused: its box shows what is in force again (a refused value must not look applied)
  document.addEventListener("oncallsim:refused", (e) => {
    const input = inputs[e.detail.field];
    if (!input || !inForce) return;
    dirty.delete(e.detail.field);
    const [service, setting] = e.detail.field.split(".");
    const value = inForce[service] && inForce[service][setting];
    if (value === undefined) return;
    if (input.type === "checkbox") input.checked = value === 1;
    else input.value = String(Number((service === graph.entry && setting === "timeout_ms" ? graph.deadline_ms : value).toFixed(4)));
  });

  document.addEventListener("oncallsim:state", (e) => {
    const s = e.detail;
    if (!s.services) return;
    inForce = s.services;
    fill(s.services);
    const closed = Boolean(s.done || s.readonly);
    for (const input of Object.values(inputs)) input.disabled = closed || input.dataset.fixed === "true";
    for (const button of body ? body.querySelectorAll("button") : []) button.disabled = closed;
  });

  // a service's control in words ("recs: Timeout (ms)"): how a room's log says who set what
  function label(control) {
    const [service, setting] = control.split(".");
    return byName[service] && LABELS[setting] ? service + ": " + LABELS[setting] : null;
  }

  // a service's switch ("api.limiter"): its value said as on or off, not as 1 or 0
  function isSwitch(control) {
    const setting = control.split(".")[1];
    return Boolean(graph.settings[setting] && graph.settings[setting].switch);
  }

  window.services = { show, label, isSwitch };
})();
