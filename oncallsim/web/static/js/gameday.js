// A game-day room: one page for everyone. The token in the link's fragment says who you are (the server decides);
// every string comes from the page's catalog (#gameday-text, translated on the server); people's text is shown as
// text, never as markup.
(function () {
  "use strict";
  const S = JSON.parse(document.getElementById("gameday-text").textContent);
  const CONTROLS = JSON.parse(document.getElementById("gameday-controls").textContent);
  const { tEvent, t, number, percent } = window.i18n;
  const $ = (id) => document.getElementById(id);
  const roomId = document.querySelector("main.gd").dataset.room;
  const realtime = Number(document.querySelector("main.gd").dataset.realtime);  // the server's real-time speed
  const key = new URLSearchParams(window.location.hash.slice(1)).get("key");
  const storeKey = "gameday:" + roomId;

  const fill = (text, args) =>
    String(text).replace(/%\((\w+)\)s/g, (_m, k) => (args && k in args ? String(args[k]) : ""));
  const roleLabel = (role) => S.roles[role] || role;
  // who wrote a line: a player by name; the facilitator (whose seat's name is its role) in the page's language
  const nameOf = (name, role) => (role === "facilitator" ? roleLabel(role) : name);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };

  let ws = null;
  let me = null; // {name, role}
  let room = null;
  let state = null;
  let records = [];
  let start = 0; // minutes since midnight of minute 0
  let closing = false;
  let retry = 0;
  let debrief = null;
  let workerLost = false; // the room's worker process ended: its reconnect says so (not "connection lost")
  // controls someone has typed into or chosen in and not yet applied: a state message leaves them as they are
  // (at 16x one comes every 60 ms, and pressing Apply takes the focus off the input before its click lands)
  const edited = new Set();

  const clockOf = (minute) => {
    const at = (start + minute) % 1440;
    return String(Math.floor(at / 60)).padStart(2, "0") + ":" + String(at % 60).padStart(2, "0");
  };

  function showError(message) {
    $("gd-error-text").textContent = fill(S.error, { message });
    $("gd-error").hidden = false;
  }
  $("gd-error-dismiss").addEventListener("click", () => { $("gd-error").hidden = true; });

  // --- the connection ---------------------------------------------------------------------------------------

  function connect() {
    const saved = JSON.parse(sessionStorage.getItem(storeKey) || "null");
    const proto = window.location.protocol === "https:" ? "wss:" : "ws:";
    const lang = document.documentElement.lang; // refusals in the page's language (English: the URL as it was)
    const query = lang && lang !== "en" ? "?lang=" + encodeURIComponent(lang) : "";
    ws = new WebSocket(proto + "//" + window.location.host + "/gameday/" + roomId + "/ws" + query);
    ws.addEventListener("open", () => {
      const join = { type: "join", token: key };
      if (saved) Object.assign(join, saved);
      ws.send(JSON.stringify(join));
    });
    ws.addEventListener("message", (event) => receive(JSON.parse(event.data), saved));
    ws.addEventListener("close", () => {
      if (closing) return;
      $("run-state").textContent = workerLost ? S.worker_lost_now : S.reconnecting;
      retry = Math.min(retry + 1, 5);
      window.setTimeout(connect, 500 * retry); // a dropped connection rejoins where the run is
    });
  }

  function send(message) {
    $("gd-error").hidden = true; // a new try: the last refusal was about the one before
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
  }

  function receive(message, saved) {
    switch (message.type) {
      case "refused":
        closing = true;
        if (message.field === "name" || message.field === "role") {
          $("join").hidden = false;
          $("room").hidden = true;
          sessionStorage.removeItem(storeKey);
          if (saved) {
            $("join-error").textContent = fill(S.refused, { message: message.message });
            $("join-error").hidden = false;
          }
        } else {
          $("no-key").textContent = fill(S.refused, { message: message.message });
          $("no-key").hidden = false;
        }
        $("run-state").replaceChildren();
        break;
      case "snapshot":
        retry = 0;
        workerLost = false;
        onSnapshot(message);
        break;
      case "state":
        onState(message);
        break;
      case "minute":
        records.push(message.record);
        showRecord(message.record);
        onState(message.state);
        break;
      case "log":
        addLog(message.entry);
        break;
      case "players":
        showPlayers(message.players);
        break;
      case "over": // at once; the debrief follows ("debrief") when it is computed
      case "finished":
        onState(message.state);
        break;
      case "debrief":
        showDebrief(message.debrief);
        break;
      case "error":
        if (message.code === "worker_lost") { // not a refusal: said where the run's state is, in the page's words
          workerLost = true;
          $("run-state").textContent = S.worker_lost_now;
        } else {
          showError(message.localized || message.message);
          document.dispatchEvent(new CustomEvent("oncallsim:refused", { detail: { field: message.field } }));
        }
        break;
    }
  }

  // --- the room's state ---------------------------------------------------------------------------------------

  function onSnapshot(snap) {
    room = snap.room;
    me = snap.you;
    const [h, m] = room.start.split(":").map(Number);
    start = h * 60 + m;
    records = snap.records;
    $("join").hidden = true;
    $("room").hidden = false;
    $("you").textContent =
      me.role === "facilitator" ? S.you_facilitate : fill(S.you_are, { name: me.name, role: roleLabel(me.role) });
    const facilitator = me.role === "facilitator";
    $("facilitator").hidden = !facilitator;
    $("status-form").hidden = me.role !== "communications";
    $("say-form").hidden = me.role === "observer";
    $("observer-note").hidden = me.role !== "observer";
    if (facilitator) {
      $("player-link").value = window.location.origin + "/gameday/" + roomId + "#key=" + snap.player_token;
      buildFaultMenu(snap.faults);
    }
    state = null; // a snapshot restarts the numbering (the server may have restarted: its states count from 1)
    edited.clear();
    $("events").replaceChildren();
    $("channel").replaceChildren();
    $("fault-list").replaceChildren();
    seen.clear(); // a snapshot (a reconnect, a reveal, the end) redraws the whole log
    faults.clear();
    revealed.clear();
    for (const r of records) showEvents(r);
    if (records.length) showRecord(records[records.length - 1], true);
    else {
      for (const name of METRICS) if ($("m-" + name)) $("m-" + name).textContent = S.none; // nothing measured before the first minute
      spark();
    }
    for (const entry of snap.log) addLog(entry);
    showPlayers(snap.players);
    buildControls();
    onState(snap.state);
    if (snap.debrief) showDebrief(snap.debrief);
  }

  function onState(s) {
    // never older over newer, within one server process (a restarted one has another epoch: followed at once)
    if (state && s.epoch === state.epoch && s.seq !== undefined && state.seq !== undefined && s.seq < state.seq) return;
    state = s;
    $("clock").textContent = s.clock;
    showRunState();
    $("f-pause").textContent = s.paused ? S.resume : S.pause;
    $("f-pause").disabled = s.done;
    $("f-step").disabled = s.done || !s.paused;
    $("f-close").disabled = s.done;
    $("f-speed").value = String(s.speed);
    for (const input of document.querySelectorAll("#controls [data-control]")) {
      input.disabled = s.done || !me || me.role === "observer" || me.role === "facilitator";
    }
    for (const [name, value] of Object.entries(s.controls || {})) {
      const input = document.querySelector('#controls [data-value="' + name + '"]');
      if (!input || edited.has(name)) continue;
      if (input.type === "checkbox") input.checked = Boolean(value);
      else input.value = String(value);
    }
    for (const form of ["say-form", "status-form", "note-form", "fault-form"]) {
      for (const field of $(form).querySelectorAll("input, button, select")) field.disabled = s.done;
    }
    // a chain's services panel (services.js) follows, its inputs closed to a seat that may not act
    const readonly = !me || me.role === "observer" || me.role === "facilitator";
    document.dispatchEvent(new CustomEvent("oncallsim:state", { detail: { ...s, readonly } }));
  }
  // a chain's services panel asks for a service's setting: sent as any action of the team's
  document.addEventListener("oncallsim:act", (e) => {
    send({ type: "action", control: e.detail.control, value: e.detail.value });
  });

  // the run's state in words: over (its debrief being computed, or ready), paused (after a server restart, or
  // back from its log after its worker process was lost: until the facilitator resumes), running (slowed: at
  // what speed)
  const PAUSED = { restored: S.restored, worker_lost: S.worker_lost };
  function showRunState() {
    if (!state) return;
    let text = state.paused ? PAUSED[state.pause_reason] || S.paused : S.running;
    const p = state.preparing;  // the run's engine is still being compiled by the server's preparer
    if (p && !state.done && p.state !== "failed") {
      text = fill(S.preparing, { engine: p.name, share: Math.round(100 * p.share), left: p.seconds_left === null ? "?" : p.seconds_left });
    }
    // a request-engine room its worker cannot keep at its speed plays slower: said, as on the console
    if (!state.paused && !state.done && state.slowed !== null && state.slowed !== undefined) {
      text += " · " + t("run.slowed", { actual: number(state.slowed, 1), speed: state.speed });
    }
    if (state.done) text = debrief ? S.over : S.over_computing;
    $("run-state").textContent = text;
  }

  // what the server's state says a control is: put back in the input (Escape abandons an edit)
  function restore(name) {
    edited.delete(name);
    const input = document.querySelector('#controls [data-value="' + name + '"]');
    if (!input || !state || !state.controls || !(name in state.controls)) return;
    if (input.type === "checkbox") input.checked = Boolean(state.controls[name]);
    else input.value = String(state.controls[name]);
  }

  // an input that keeps what was typed until it is applied (Apply, Enter) or abandoned (Escape)
  function editable(input, name, apply) {
    input.addEventListener("input", () => edited.add(name));
    input.addEventListener("change", () => edited.add(name));
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") restore(name);
      else if (e.key === "Enter" && input.tagName === "INPUT") { e.preventDefault(); apply(); }
    });
  }

  // --- what the service shows (its symptoms) ------------------------------------------------------------------

  const METRICS = ["requests_per_s", "error_rate", "p99_ms", "cache_hit", "db_utilization", "burn_1h",
    "budget_left", "serving", "booting"];

  function showRecord(r, quiet) {
    for (const name of METRICS) {
      const cell = $("m-" + name);
      if (!cell) continue; // a chain has no one cache and database: its services are drawn instead
      const [level, word] = window.fmt.flag(name, r);
      cell.textContent = window.fmt.fmt[name](r) + (word ? " · " + word : "");
      cell.className = "num " + (level ? "gd-" + level : "");
    }
    const banner = $("page-banner");
    banner.hidden = !r.page_firing;
    banner.textContent = S.page_firing;
    if (window.services && typeof window.services.show === "function") window.services.show(r); // a chain's diagram
    if (!quiet) showEvents(r);
    spark();
  }

  function showEvents(r) {
    const list = $("events");
    for (const event of r.events || []) {
      const item = el("li", "gd-event gd-" + (event.kind || "system"));
      item.append(el("span", "gd-time", r.label || r.clock), el("span", "", " " + tEvent(event)));
      list.prepend(item);
    }
    while (list.children.length > 200) list.lastChild.remove();
  }

  function spark() {
    const box = $("spark");
    const recent = records.slice(-60);
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 60 20");
    svg.setAttribute("preserveAspectRatio", "none");
    const top = Math.max(0.01, ...recent.map((r) => r.error_rate));
    recent.forEach((r, i) => {
      const bar = document.createElementNS(ns, "rect");
      const height = Math.max(0.2, (20 * r.error_rate) / top);
      bar.setAttribute("x", String(i + 60 - recent.length));
      bar.setAttribute("y", String(20 - height));
      bar.setAttribute("width", "0.8");
      bar.setAttribute("height", String(height));
      bar.setAttribute("class", r.error_rate > 0.001 ? "gd-bar-bad" : "gd-bar");
      svg.append(bar);
    });
    box.replaceChildren(svg);
  }

  // --- the team's controls -------------------------------------------------------------------------------------

  function buildControls() {
    const box = $("controls");
    box.replaceChildren();
    // the request engine's overload controls folded under one summary, as on the console
    const group = el("details", "gd-resilience");
    group.append(el("summary", "", S.resilience));
    for (const c of CONTROLS) {
      const row = el("div", "gd-control");
      const label = S.controls[c.name] || c.name;
      if (c.kind === "button") {
        const button = el("button", c.danger ? "danger" : "", label);
        button.type = "button";
        button.dataset.control = c.name;
        button.addEventListener("click", () => send({ type: "action", control: c.name }));
        row.append(button);
      } else if (c.kind === "bool") {
        const wrap = el("label");
        const box2 = el("input");
        box2.type = "checkbox";
        box2.setAttribute("role", "switch");
        box2.dataset.control = c.name;
        box2.dataset.value = c.name;
        box2.addEventListener("change", () => send({ type: "action", control: c.name, value: box2.checked }));
        wrap.append(box2, document.createTextNode(" " + label));
        row.append(wrap);
      } else if (c.kind === "choice") {
        const wrap = el("label", "", label + " ");
        const select = el("select");
        for (const choice of c.choices) {
          const option = el("option", "", S.control_choices[choice] || String(choice));
          option.value = choice;
          select.append(option);
        }
        select.dataset.value = c.name;
        select.dataset.control = c.name;
        const apply = el("button", "", S.apply);
        apply.type = "button";
        apply.dataset.control = c.name;
        const applyChoice = () => {
          edited.delete(c.name);
          send({ type: "action", control: c.name, value: select.value });
        };
        apply.addEventListener("click", applyChoice);
        editable(select, c.name, applyChoice);
        wrap.append(select);
        row.append(wrap, apply);
      } else {
        // the unit in the page's language, unless the label has it as a word already (not "Retries (retries)"; but
        // "Cachens TTL (s)": the letter s inside a word is not the unit)
        const unitText = c.unit ? S.units[c.unit] || c.unit : "";
        const words = label.toLocaleLowerCase().split(/[^\p{L}\p{N}/]+/u);
        const unit = unitText && !words.includes(unitText.toLocaleLowerCase()) ? unitText : "";
        const wrap = el("label", "", label + (unit ? " (" + unit + ")" : "") + " ");
        const input = el("input");
        input.type = "number";
        if (c.min !== null) input.min = String(c.min);
        if (c.max !== null) input.max = String(c.max);
        if (c.step !== null) input.step = String(c.step);
        if (c.kind === "instance") {
          input.min = "0";
          input.step = "1";
        }
        input.dataset.value = c.name;
        input.dataset.control = c.name;
        const apply = el("button", "", S.apply);
        apply.type = "button";
        apply.dataset.control = c.name;
        const applyNumber = () => {
          const whole = c.kind === "int" || c.kind === "instance";
          const value = whole ? parseInt(input.value, 10) : Number(input.value);
          edited.delete(c.name); // the next state shows what the server made of it (or the error says why not)
          send({ type: "action", control: c.name, value });
        };
        apply.addEventListener("click", applyNumber);
        editable(input, c.name, applyNumber);
        wrap.append(input);
        row.append(wrap, apply);
      }
      (c.group === "resilience" ? group : box).append(row);
    }
    if (group.children.length > 1) box.append(group);
  }

  // --- the channel and the log --------------------------------------------------------------------------------

  function actionText(data) {
    // a chain's <service>.<setting> (services.js's, once it has run: before, window.services is the panel's element)
    const panel = window.services && typeof window.services.label === "function" ? window.services : null;
    const service = panel && panel.label(data.control);
    const label = S.controls[data.control] || service || data.control;
    if (data.value === undefined || data.value === null) return label;
    if (typeof data.value === "boolean" || (service && panel.isSwitch(data.control))) {
      return label + ": " + (data.value ? S.on : S.off);
    }
    return label + " = " + data.value;
  }

  function faultText(data) {
    const fault = S.faults[data.kind] || data.kind.replace(/_/g, " ");
    const service = data.values && data.values.service; // a chain's service fault names its service
    if (typeof service === "string") return fill(S.fault_service, { fault, service, at: data.at });
    return fill(S.fault_at, { fault, at: data.at });
  }

  const revealed = new Set();

  function logText(e) {
    const who = { who: nameOf(e.name, e.role), role: roleLabel(e.role) };
    switch (e.kind) {
      case "action":
        return fill(S.templates["%(who)s (%(role)s): %(action)s"], { ...who, action: actionText(e.data) });
      case "message":
        return fill(S.chat, { ...who, text: e.data.text });
      case "status":
        return fill(S.status_post, { ...who, text: e.data.text });
      case "note":
        return fill(S.note, { text: e.data.text });
      case "join":
        return fill(S.joined, who);
      case "close":
        return fill(S.closed_by, who);
      case "control": {
        const realTime = e.data.what === "speed" && e.data.value === realtime;
        return fill(S.control_by, { who: nameOf(e.name, e.role), what: fill(S["control." + e.data.what + (realTime ? ".realtime" : "")], e.data) });
      }
      case "reveal":
        return null;
      case "inject": {
        const hidden = e.data.hidden && !revealed.has(e.seq);
        const template = e.data.hidden
          ? "fault injected by the facilitator, hidden from the players: %(fault)s"
          : "fault injected by the facilitator: %(fault)s";
        return (hidden ? "" : "") + fill(S.templates[template], { fault: faultText(e.data) });
      }
    }
    return null;
  }

  const seen = new Set();

  function addLog(e) {
    if (e.kind === "reveal") {
      revealed.add(e.data.seq);
      showFaults();
    }
    if (seen.has(e.seq) && e.kind !== "inject") return;
    const text = logText(e);
    if (e.kind === "inject") {
      faults.set(e.seq, e);
      showFaults();
    }
    if (seen.has(e.seq)) return;
    seen.add(e.seq);
    if (text === null) return;
    const item = el("li", "gd-entry gd-" + e.kind);
    item.dataset.kind = e.kind;
    item.append(el("span", "gd-time", clockOf(e.minute)), el("span", "gd-text", " " + text));
    $("channel").append(item);
    item.scrollIntoView({ block: "nearest" });
    if (e.kind === "status") {
      $("status-latest").textContent = clockOf(e.minute) + " · " + e.data.text;
      $("status-latest").className = "";
    }
  }

  const faults = new Map();

  function showFaults() {
    const list = $("fault-list");
    list.replaceChildren();
    for (const [seq, e] of faults) {
      const hidden = e.data.hidden && !revealed.has(seq);
      const item = el("li", "", faultText(e.data) + " · " + (hidden ? S.hidden : S.visible));
      if (hidden && me && me.role === "facilitator" && !(state && state.done)) {
        const button = el("button", "", S.reveal);
        button.type = "button";
        button.addEventListener("click", () => send({ type: "reveal", seq }));
        item.append(document.createTextNode(" "), button);
      }
      list.append(item);
    }
  }

  function showPlayers(players) {
    const list = $("players");
    list.replaceChildren();
    if (!players.length) list.append(el("li", "muted", S.nobody));
    for (const p of players) {
      const item = el("li", p.online === "yes" ? "" : "muted", p.name + " · " + roleLabel(p.role));
      item.append(el("span", "gd-presence", " (" + (p.online === "yes" ? S.online : S.offline) + ")"));
      list.append(item);
    }
  }

  // --- the facilitator's panel ----------------------------------------------------------------------------------

  let menu = [];

  function buildFaultMenu(items) {
    menu = items || [];
    const select = $("fault-kind");
    select.replaceChildren();
    for (const f of menu) {
      const option = el("option", "", S.faults[f.kind] || f.label);
      option.value = f.kind;
      select.append(option);
    }
    buildFaultFields();
  }

  function buildFaultFields() {
    const item = menu.find((f) => f.kind === $("fault-kind").value);
    const box = $("fault-fields");
    box.replaceChildren();
    if (!item) return;
    for (const field of item.fields) {
      if (field.type === "clock" || field.type === "clocks") continue;
      const label = el("label", "", (S.fields[field.name] || field.name.replace(/_/g, " ")) + " ");
      if (field.type === "choice") {
        const select = el("select");
        for (const choice of field.choices) {
          // a chain's services by their names; the other choices in words
          const option = el("option", "", (field.name !== "service" && S.choices[choice]) || String(choice));
          option.value = choice;
          select.append(option);
        }
        if (field.default !== undefined && field.default !== null) select.value = field.default;
        select.dataset.field = field.name;
        select.dataset.type = "choice";
        label.append(select);
        box.append(label);
        continue;
      }
      const input = el("input");
      input.type = "number";
      input.step = field.type === "integer" ? "1" : "any";
      if (field.minimum !== undefined) input.min = String(field.minimum);
      if (field.maximum !== undefined) input.max = String(field.maximum);
      if (field.default !== undefined && field.default !== null) input.value = String(field.default);
      input.dataset.field = field.name;
      input.dataset.type = field.type;
      input.required = true;
      label.append(input);
      box.append(label);
    }
  }

  $("fault-kind").addEventListener("change", buildFaultFields);
  $("fault-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const values = {};
    for (const input of $("fault-fields").querySelectorAll("[data-field]")) {
      const type = input.dataset.type;
      values[input.dataset.field] =
        type === "choice" ? input.value : type === "integer" ? parseInt(input.value, 10) : Number(input.value);
    }
    send({
      type: "inject",
      kind: $("fault-kind").value,
      at: $("fault-at").value.trim(),
      values,
      hidden: $("fault-hidden").checked,
    });
  });
  $("f-pause").addEventListener("click", () => send({ type: state && state.paused ? "resume" : "pause" }));
  $("f-step").addEventListener("click", () => send({ type: "step" }));
  $("f-speed").addEventListener("change", () => send({ type: "speed", value: Number($("f-speed").value) }));
  $("f-close").addEventListener("click", () => {
    if (window.confirm(S.confirm_close)) send({ type: "close" });
  });
  $("copy-link").addEventListener("click", () => {
    $("player-link").select();
    if (navigator.clipboard) navigator.clipboard.writeText($("player-link").value).catch(() => {});
  });

  function sayForm(form, input, type) {
    $(form).addEventListener("submit", (event) => {
      event.preventDefault();
      const text = $(input).value.trim();
      if (!text) return;
      send({ type, text });
      $(input).value = "";
    });
  }
  sayForm("say-form", "say-text", "message");
  sayForm("status-form", "status-text", "status");
  sayForm("note-form", "note-text", "note");

  // --- the debrief --------------------------------------------------------------------------------------------

  const minutes = (n) => (n === null || n === undefined ? S.none : fill(S.minutes, { n }));

  function showDebrief(d) {
    debrief = d;
    showRunState();
    $("debrief").hidden = false;
    $("d-score").textContent = fill(S.score, { score: d.score }) + " " + (d.passed ? S.all_met : S.missed);
    $("d-fault").textContent = d.intervals.fault_clock || S.none;
    $("d-detect").textContent = minutes(d.intervals.detect_min);
    $("d-mitigate").textContent = minutes(d.intervals.mitigate_min);
    $("d-recover").textContent = minutes(d.intervals.recover_min);
    const objectives = $("d-objectives");
    objectives.replaceChildren();
    if (!d.objectives.length) objectives.append(el("li", "muted", S.none));
    for (const o of d.objectives) {
      const item = el("li", o.passed ? "pass" : "fail", (o.passed ? S.passed : S.failed) + ": " + o.name);
      objectives.append(item);
    }
    showOrigins(d.origins);
    const body = $("d-timeline");
    body.replaceChildren();
    for (const row of d.timeline) {
      const tr = el("tr", "gd-row-" + row.kind);
      tr.dataset.kind = row.kind;
      const args = { ...row.args };
      if (row.role && args.role !== undefined) args.role = roleLabel(row.role);
      if (row.fault) args.fault = faultText(row.fault); // in the page's language, as the room's log says it
      tr.append(
        el("td", "gd-time", row.clock),
        el("td", "", row.who ? nameOf(row.who, row.role) : S.none),
        el("td", "", fill(S.templates[row.template] || row.template, args)),
      );
      body.append(tr);
    }
  }

  // a chain's "Where the failures began", as the console's debrief shows it
  function showOrigins(o) {
    const box = $("d-origins");
    if (!box || !o) return;
    const sentence = (s) => fill(S.sentences[s.template] || s.template, s.args);
    // the headline's shares in the page's language: the server words them in English ("12.5%"), its row has them
    const headline = (s) => {
      const top = o.services.find((row) => row.service === (s.args.service || o.entry));
      const args = top ? { ...s.args, share: percent(top.share, 1), budget: percent(top.budget_spent, 1) } : s.args;
      return fill(S.sentences[s.template] || s.template, args);
    };
    $("d-origins-headline").textContent = o.headline.map(headline).join(" ");
    const rows = $("d-origins-rows");
    rows.replaceChildren();
    for (const row of o.services) {
      const tr = el("tr");
      tr.dataset.service = row.service;
      tr.append(el("td", "", row.service), el("td", "num", number(row.failed)), el("td", "num", percent(row.share, 1)),
        el("td", "num", percent(row.budget_spent, 1)), el("td", "num", percent(row.seen_share)));
      rows.append(tr);
    }
    const list = $("d-contradictions");
    list.replaceChildren(...o.contradictions.map((c) => el("li", "", sentence(c))));
    $("d-no-contradictions").hidden = o.contradictions.length > 0;
    box.hidden = false;
  }

  async function download(what, filename) {
    if (what === "markdown" && debrief) {
      save(new Blob([debrief.markdown], { type: "text/markdown" }), filename);
      return;
    }
    const response = await fetch("/api/gameday/rooms/" + roomId + "/export", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: key, what }),
    });
    if (!response.ok) {
      const refusal = await response.json();
      showError(refusal.localized || refusal.error);
      return;
    }
    save(await response.blob(), filename);
  }

  function save(blob, filename) {
    const link = el("a");
    link.href = URL.createObjectURL(blob);
    link.download = filename;
    document.body.append(link);
    link.click();
    link.remove();
  }

  $("x-markdown").addEventListener("click", () => download("markdown", "gameday-" + roomId + "-postmortem.md"));
  $("x-room").addEventListener("click", () => download("room", "gameday-" + roomId + ".json"));
  $("x-run").addEventListener("click", () => download("run", "gameday-" + roomId + "-run.json"));

  // --- joining ----------------------------------------------------------------------------------------------

  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const who = { name: $("join-name").value.trim(), role: $("join-role").value };
    sessionStorage.setItem(storeKey, JSON.stringify(who));
    $("join-error").hidden = true;
    closing = false;
    if (ws) ws.close();
    connect();
  });

  if (!key) {
    $("no-key").hidden = false;
    $("run-state").replaceChildren();
  } else {
    connect();
  }
})();
