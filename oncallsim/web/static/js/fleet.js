// The fleet view: every instance of a request-engine run as a tile (build, health, speed, in rotation,
// in flight, queue, CPU, p99, share of traffic), redrawn from each minute's record, with the operator's
// per-instance actions (eject / readmit, replace). It listens to the record the console shows ("oncallsim:record"),
// so it never drifts from the status table; it only shows the record's numbers and ratios of them. A field the
// engine does not send shows "—". Actions go through the run's action API, as every control's do: the server
// validates them and its refusal is shown as it wrote it.
(function () {
  "use strict";
  const section = document.getElementById("fleet");
  const root = document.querySelector("main.console");
  if (!section || !root) return;
  const texts = JSON.parse(document.getElementById("fleet-text").textContent);
  const tiles = document.getElementById("fleet-tiles");
  const summary = document.getElementById("fleet-summary");
  const trouble = document.getElementById("fleet-trouble");
  const TROUBLE_NAMED = 6;
  const runId = root.dataset.run;
  const NONE = "—";

  // tr(KEY, {id: "i-07"}) -> the partial's (translated) text with {id} filled in
  function tr(key, params) {
    let text = Object.prototype.hasOwnProperty.call(texts, key) ? texts[key] : "⟦" + key + "⟧";
    for (const [name, value] of Object.entries(params || {})) text = text.split("{" + name + "}").join(String(value));
    return text;
  }
  // numbers the page language's way (the translation layer's formatters: its symbols, its percent sign)
  const { number, percent } = window.i18n;
  const idText = (i) => "i-" + String(i).padStart(2, "0");
  const known = (x) => x !== undefined && x !== null && !(typeof x === "number" && !Number.isFinite(x));

  // The console's ack names an action by the element #c-CONTROL's data-label: give the fleet's actions one.
  for (const control of ["eject", "readmit", "replace"]) {
    if (document.getElementById("c-" + control)) continue;
    const label = document.createElement("span");
    label.id = "c-" + control;
    label.hidden = true;
    label.dataset.label = tr("control." + control);
    label.dataset.kind = "instance"; // its value reads as the tile names the instance: "i-09"
    section.append(label);
  }

  // ---- one instance's numbers out of the record (undefined where the engine sends no such field) -------------
  function fieldsOf(lists, i, extras, total) {
    const at = (name) => (Array.isArray(lists[name]) && i < lists[name].length ? lists[name][i] : undefined);
    const f = {
      served: at("served"), errors: at("errors"), busy_s: at("busy_s"), bad_build: at("bad_build"),
      speed: at("speed"), health: at("health"), registered: at("registered"), ejected: at("ejected"),
      replacing: at("replacing"), base_speed: at("base_speed"),
      in_flight: at("in_flight"), queue: at("queue"), p99_ms: at("p99_ms"),
    };
    const workers = extras.workers_per_instance;
    f.cpu = known(f.busy_s) && known(workers) && workers > 0 ? f.busy_s / (60 * workers) : undefined;
    f.share = known(f.served) && total > 0 ? f.served / total : undefined;
    // in rotation: registered and not ejected (unknown while either field is missing)
    f.rotation = known(f.registered) && known(f.ejected) ? Boolean(f.registered) && !f.ejected : undefined;
    return f;
  }

  // The tile's state: a level for the colour and a word (and a mark) so that colour never carries it alone.
  function stateOf(f) {
    if (known(f.replacing) && f.replacing) return ["boot", "↻", tr("state.replacing")];
    if (known(f.ejected) && f.ejected) return ["out", "⏏", tr("state.ejected")];
    if (f.health === "refuse") return ["bad", "✖", tr("state.down")];
    if (f.health === "hang") return ["bad", "∞", tr("state.hang")];
    if (f.health === "offline") return ["bad", "⊘", tr("state.offline")];
    if (f.health === "booting") return ["boot", "↻", tr("state.booting")];
    if (known(f.registered) && !f.registered) return ["warn", "?", tr("state.unregistered")];
    // slower than its machine (a fleet of mixed machines sends each slot's own speed)
    if (known(f.speed) && f.speed < (known(f.base_speed) ? f.base_speed : 1)) return ["warn", "▼", tr("state.slow")];
    if (known(f.bad_build) && f.bad_build) return ["warn", "⚠", tr("state.bad_build")];
    if (known(f.errors) && known(f.served) && f.errors > 0.01 * Math.max(f.served, 1)) return ["warn", "⚠", tr("state.errors")];
    return ["ok", "●", tr("state.ok")];
  }

  const FIELDS = ["build", "health", "speed", "rotation", "in_flight", "queue", "cpu", "p99", "share"];

  function valueOf(name, f) {
    switch (name) {
      case "build": return known(f.bad_build) ? (f.bad_build ? "⚠ " + tr("build.bad") : tr("build.good")) : NONE;
      case "health": return known(f.health) ? (Object.prototype.hasOwnProperty.call(texts, "health." + f.health) ? tr("health." + f.health) : String(f.health)) : NONE;
      case "speed": return known(f.speed) ? tr("speed", { x: number(f.speed, Number.isInteger(f.speed) ? 0 : f.speed < 1 ? 2 : 1) }) : NONE;
      case "rotation": return known(f.rotation) ? (f.rotation ? "✓ " + tr("rotation.in") : "✗ " + tr("rotation.out")) : NONE;
      case "in_flight": return known(f.in_flight) ? number(f.in_flight, 0) : NONE;
      case "queue": return known(f.queue) ? number(f.queue, 0) : NONE;
      case "cpu": return known(f.cpu) ? percent(f.cpu) : NONE;
      case "p99": // seconds from one second on: a timed-out tail stays short enough for its cell
        if (!known(f.p99_ms)) return NONE;
        return f.p99_ms < 1000 ? tr("ms", { n: number(f.p99_ms, 0) }) : tr("s", { n: number(f.p99_ms / 1000, 1) });
      case "share": return known(f.share) ? percent(f.share) : NONE;
    }
    return NONE;
  }

  // ---- tiles: made once per slot and kept (a button keeps its focus while the minutes tick) --------------
  function makeTile(i) {
    const id = idText(i);
    const tile = document.createElement("li");
    tile.className = "tile";
    tile.dataset.instance = String(i);
    const head = document.createElement("div");
    head.className = "tile-head";
    const name = document.createElement("strong");
    name.className = "tile-id";
    name.id = "fleet-" + i;
    name.textContent = id;
    const state = document.createElement("span");
    state.className = "tile-state";
    head.append(name, state);
    tile.setAttribute("aria-labelledby", name.id);
    const list = document.createElement("dl");
    list.className = "tile-fields";
    for (const field of FIELDS) {
      const pair = document.createElement("div");
      pair.dataset.field = field;
      const dt = document.createElement("dt");
      dt.textContent = tr("field." + field);
      const dd = document.createElement("dd");
      dd.textContent = NONE;
      pair.append(dt, dd);
      list.append(pair);
    }
    const note = document.createElement("p");
    note.className = "tile-note";
    note.setAttribute("aria-live", "polite");
    const actions = document.createElement("div");
    actions.className = "tile-actions";
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.dataset.act = "eject";
    const replace = document.createElement("button");
    replace.type = "button";
    replace.className = "danger";
    replace.dataset.act = "replace";
    replace.textContent = tr("replace");
    replace.setAttribute("aria-label", tr("replace.label", { id }));
    replace.title = tr("replace.label", { id });
    actions.append(toggle, replace);
    tile.append(head, list, note, actions);
    toggle.addEventListener("click", () => { if (!waiting(toggle)) ask(i, toggle.dataset.act); });
    replace.addEventListener("click", () => waiting(replace) ||
      confirmThen(tr("confirm.replace", { id }), tr("confirm.replace_yes", { id }), () => ask(i, "replace")));
    return tile;
  }

  function showTile(tile, f, minute) {
    const i = Number(tile.dataset.instance);
    const id = idText(i);
    const [level, mark, word] = stateOf(f);
    tile.dataset.state = level;
    tile.dataset.rotation = known(f.rotation) ? (f.rotation ? "in" : "out") : "unknown";
    tile.querySelector(".tile-state").textContent = mark + " " + word;
    for (const field of FIELDS) {
      const dd = tile.querySelector('[data-field="' + field + '"] dd');
      const value = valueOf(field, f);
      if (dd.textContent !== value) { dd.textContent = value; dd.title = value; } // whole on hover if a language's word is cut
    }
    tile.querySelector('[data-field="speed"]').title = tr("speed.title");
    tile.querySelector('[data-field="health"]').title = known(f.errors) && known(f.served)
      ? tr("errors.title", { n: number(f.errors, 0), served: number(f.served, 0) }) : "";
    const toggle = tile.querySelector('[data-act="eject"], [data-act="readmit"]');
    const act = known(f.ejected) && f.ejected ? "readmit" : "eject";
    toggle.dataset.act = act;
    toggle.textContent = tr(act);
    toggle.setAttribute("aria-label", tr(act + ".label", { id }));
    toggle.title = tr(act + ".label", { id });
    // an action asked for shows until the minute it applies to has been drawn
    const note = tile.querySelector(".tile-note");
    if (tile.dataset.askedAt !== undefined && minute > Number(tile.dataset.askedAt)) {
      delete tile.dataset.askedAt;
      delete tile.dataset.asked;
    }
    const asked = tile.dataset.asked ? tr("pending", { action: tr(tile.dataset.asked) }) : "";
    if (note.textContent !== asked) note.textContent = asked;
    markAsked(tile);
  }

  // The action just asked for is not asked twice before it applies: its button says so (aria-disabled, so a
  // keyboard keeps its place) and ignores presses until the next minute.
  function markAsked(tile) {
    for (const button of tile.querySelectorAll("button")) {
      if (tile.dataset.asked === button.dataset.act) button.setAttribute("aria-disabled", "true");
      else button.removeAttribute("aria-disabled");
    }
  }
  const waiting = (button) => button.getAttribute("aria-disabled") === "true";

  let lastRecord = null;
  let frame = false;

  function show(r) {
    const lists = r && r.extras && r.extras.instances;
    if (!lists || typeof lists !== "object") { section.hidden = true; return; }
    section.hidden = false;
    const count = Math.max(0, ...Object.values(lists).map((v) => (Array.isArray(v) ? v.length : 0)));
    while (tiles.children.length < count) tiles.append(makeTile(tiles.children.length));
    while (tiles.children.length > count) tiles.lastElementChild.remove();
    const served = Array.isArray(lists.served) ? lists.served : [];
    const total = served.reduce((sum, x) => sum + (known(x) ? x : 0), 0);
    let inRotation = 0, rotationKnown = false;
    const attention = [];
    for (let i = 0; i < count; i++) {
      const f = fieldsOf(lists, i, r.extras, total);
      showTile(tiles.children[i], f, r.minute);
      if (known(f.rotation)) { rotationKnown = true; if (f.rotation) inRotation++; }
      if (tiles.children[i].dataset.state !== "ok") attention.push(idText(i) + " " + stateOf(f)[2]);
    }
    let text = tr("summary", { n: number(count, 0), rotation: rotationKnown ? number(inRotation, 0) : NONE, attention: number(attention.length, 0) });
    if (known(r.extras.balancer)) text += " · " + tr("summary_balancer", { name: r.extras.balancer });
    summary.textContent = text;
    // the instances that need a look, named (readable with the dock folded)
    const shown = attention.slice(0, TROUBLE_NAMED);
    if (attention.length > shown.length) shown.push(tr("more", { n: number(attention.length - shown.length, 0) }));
    trouble.textContent = shown.join(", ");
    section.dataset.trouble = String(attention.length > 0);
    section.dataset.minute = String(r.minute);
    section.dataset.instances = String(count);
  }

  // Open on a narrow screen (the tiles lie under the charts); on a laptop a bar that opens as a sheet over the
  // charts, and Escape folds it again (the focus back on its bar).
  const details = document.getElementById("fleet-details");
  details.open = !window.matchMedia("(min-width: 1101px)").matches;
  details.addEventListener("keydown", (e) => {
    if (e.key !== "Escape" || !details.open || !window.matchMedia("(min-width: 1101px)").matches) return;
    details.open = false;
    details.querySelector("summary").focus();
  });

  // the diagram's fleet box opens the view too (the bar stays the keyboard's way in)
  const fleetBox = document.querySelector('#diagram [data-part="fleet"]');
  if (fleetBox) {
    fleetBox.classList.add("opens-fleet");
    fleetBox.addEventListener("click", () => {
      if (section.hidden) return;
      details.open = true;
      section.scrollIntoView({ block: "nearest" });
    });
  }

  // at most one redraw per frame, of the newest record (16× must not fall behind)
  document.addEventListener("oncallsim:record", (e) => {
    lastRecord = e.detail;
    if (frame) return;
    frame = true;
    requestAnimationFrame(() => { frame = false; show(lastRecord); });
  });

  // ---- actions -------------------------------------------------------------------------------------------
  const banner = document.getElementById("error");
  let bannerTimer = null;
  function flash(message, kind) { // the console's banner, in its style: the server's words as it wrote them
    banner.hidden = false;
    banner.className = "error-banner " + kind;
    banner.textContent = message;
    clearTimeout(bannerTimer);
    bannerTimer = setTimeout(() => { banner.hidden = true; }, 6000);
  }

  async function ask(i, control) {
    const tile = tiles.children[i];
    section.dataset.result = "waiting";
    let answer = null, body = null;
    try {
      // ?lang=: a refusal comes back in the page's language too (its "localized" beside the English "error")
      const lang = document.documentElement.lang;
      const query = lang && lang !== "en" ? "?lang=" + encodeURIComponent(lang) : "";
      answer = await fetch("/api/runs/" + encodeURIComponent(runId) + "/actions" + query, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ control, value: i }),
      });
      body = await answer.json().catch(() => null);
    } catch (error) {
      section.dataset.result = "refused";
      flash(tr("unreachable", { message: error.message }), "bad");
      return;
    }
    if (!answer.ok) {
      section.dataset.result = "refused";
      flash((body && (body.localized || body.error)) || answer.statusText, "bad");
      return;
    }
    section.dataset.result = "accepted";
    if (tile) {
      tile.dataset.asked = control;
      tile.dataset.askedAt = String(lastRecord ? lastRecord.minute : -1);
      // out of rotation is not out of the fleet: said on the tile when the player ejects it (in the shared banner
      // the console's own "logged, applies from" note, arriving by the socket, could replace it)
      const why = control === "eject" ? " " + tr("eject_counts") : "";
      tile.querySelector(".tile-note").textContent = tr("pending", { action: tr(control) }) + why;
      markAsked(tile);
    }
  }

  // Replace asks first, in the console's own confirmation dialog (as the rollback does).
  const confirmBox = document.getElementById("confirm");
  function confirmThen(message, yesLabel, yes) {
    document.getElementById("confirm-text").textContent = message;
    document.getElementById("confirm-yes").textContent = yesLabel;
    confirmBox.returnValue = "";
    confirmBox.onclose = () => { if (confirmBox.returnValue === "yes") yes(); };
    confirmBox.showModal();
  }

  // The run over (or watched again): the actions are off, as the console's controls are. The console says so
  // by disabling its Pause button; the fleet follows it.
  const pause = document.getElementById("pause");
  function followRunState() {
    const over = pause.disabled;
    for (const button of tiles.querySelectorAll("button")) button.disabled = over;
    section.dataset.over = String(over);
  }
  new MutationObserver(followRunState).observe(pause, { attributes: true, attributeFilter: ["disabled"] });
  new MutationObserver(followRunState).observe(tiles, { childList: true });
})();
