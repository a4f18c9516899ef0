// The live console: one WebSocket to the server, which owns the simulated clock. This script only shows
// what the core computed and sends the operator's inputs; every string comes from the i18n catalog.
(function () {
  "use strict";
  const { t, tEvent, number, exact, percent, separators } = window.i18n;
  const { fmt, flag } = window.fmt;
  const root = document.querySelector("main.console");
  const runId = root.dataset.run;
  const timeoutMs = Number(root.dataset.timeoutMs);
  const pageBurn = Number(root.dataset.pageBurn);
  const latencyTarget = Number(root.dataset.latencyTarget);
  const sloError = Number(root.dataset.sloError);
  const $ = (id) => document.getElementById(id);

  let socket = null;
  let records = [];
  let state = null;
  let finished = false;
  let retry = 0;
  let pageSince = null; // the clock when the page fired
  const editing = new Set(); // controls the operator is dragging: not overwritten by the server's state

  // ---- charts ---------------------------------------------------------------------------------------------
  const CHARTS = {
    "chart-traffic": {
      title: t("chart.traffic"),
      traces: [
        ["requests_per_s", t("series.requests"), "#1d4ed8", "solid"],
        ["capacity_per_s", t("series.capacity"), "#64748b", "dot"],
      ],
    },
    "chart-p99": {
      title: t("chart.p99"),
      traces: [["p99_ms", t("series.p99"), "#7c3aed", "solid"]],
      lines: [[timeoutMs, t("series.timeout"), "#b91c1c"], [latencyTarget, t("series.latency_target"), "#94a3b8"]],
    },
    "chart-burn": {
      title: t("chart.burn"),
      traces: [
        ["burn_1h", t("series.burn_1h"), "#b91c1c", "solid"],
        ["burn_5m", t("series.burn_5m"), "#f97316", "dot"],
      ],
      lines: [[pageBurn, t("series.page_threshold", { x: number(pageBurn, 1) }), "#111827"]],
    },
    "chart-errors": {
      title: t("chart.errors"),
      traces: [["error_rate", t("series.error_rate"), "#b91c1c", "solid", 100]],
      lines: [[100 * sloError, t("series.slo", { x: percent(sloError, 2) }), "#111827"]],
    },
    "chart-cache": {
      title: t("chart.cache"),
      traces: [
        ["cache_hit", t("series.cache_hit"), "#0891b2", "solid", 100],
        ["db_utilization", t("series.db_utilization"), "#a16207", "solid", 100],
      ],
    },
    "chart-fleet": {
      title: t("chart.fleet"),
      traces: [
        ["serving", t("series.serving"), "#1d4ed8", "solid"],
        ["booting", t("series.booting"), "#93c5fd", "dot"],
      ],
    },
  };
  // A request-engine run also charts what only it measures (its records' extras): goodput against throughput,
  // and the attempts each request took beside the share of work wasted on requests whose client had given up.
  // A measure the engine does not send yet falls back: goodput from the error rate, one attempt per request.
  const extra = (r, name) => {
    const value = r.extras ? r.extras[name] : undefined;
    return typeof value === "number" && Number.isFinite(value) ? value : undefined;
  };
  const goodput = (r) => {
    const sent = extra(r, "goodput_per_s");
    return sent !== undefined ? sent : r.admitted_per_s * (1 - r.error_rate);
  };
  const attempts = (r) => {
    const sent = extra(r, "attempts_per_s");
    if (sent === undefined) return 1;
    return r.admitted_per_s > 0 ? sent / r.admitted_per_s : null; // attempts: the admitted requests and their retries
  };
  // the workers' busy time spent on requests whose client had given up (the engine's worker-seconds, answered or
  // cut short by a deadline) against the minute's busy seconds, as the debrief does
  const wastedShare = (r) => {
    const wasted = extra(r, "wasted_work_s");
    const busy = r.utilization * r.servers * 60;
    if (wasted === undefined || !(busy > 0)) return wasted === undefined ? null : 0;
    return Math.min(1, wasted / busy);
  };
  if ($("chart-goodput")) {
    CHARTS["chart-goodput"] = {
      title: t("chart.goodput"),
      traces: [
        [goodput, t("series.goodput"), "#15803d", "solid"],
        [(r) => extra(r, "completed_per_s"), t("series.throughput"), "#64748b", "dot"],
      ],
    };
  }
  if ($("chart-attempts")) {
    CHARTS["chart-attempts"] = {
      title: t("chart.attempts"),
      traces: [
        [attempts, t("series.attempts"), "#7c3aed", "solid", 1, "y", 2],
        [wastedShare, t("series.wasted_work"), "#b45309", "dot", 100, "y2"],
      ],
    };
  }
  // a chart the page does not have is not drawn (a chain of services has no one cache and database)
  for (const id of Object.keys(CHARTS)) if (!$(id)) delete CHARTS[id];
  // A chain's services, each a line: how long its answers take (p99) beside the clients' deadline
  const graphOf = (r) => (r.extras && r.extras.graph ? r.extras.graph.services : null);
  const diagramGraph = $("diagram") && $("diagram").dataset.graph ? JSON.parse($("diagram").dataset.graph) : null;
  const colours = ["#1d4ed8", "#b91c1c", "#15803d", "#a16207", "#7c3aed", "#0891b2", "#be185d", "#475569"];
  // A chain has no one capacity to draw its requests against: its first chart is each service's saturation, the
  // share of its workers busy over the minute (what an operator reads first on a dashboard of services), a
  // service a line in the same colour as on the p99 chart, beside the 100 % at which its queue starts to grow.
  if (diagramGraph && $("chart-traffic")) {
    CHARTS["chart-traffic"] = {
      title: t("chart.saturation"),
      traces: diagramGraph.services.map((s, i) => [
        (r) => { const g = graphOf(r); return g && g[s.name] ? g[s.name].utilization : null; },
        s.name, colours[i % colours.length], "solid", 100,
      ]),
      // the 100 % line named on hover, not in the legend: a legend of the services alone stays two columns in
      // every language (a fourth, longer name made each entry a row, behind a scroll bar, in isiZulu and Armenian)
      lines: [[100, t("series.all_busy"), "#111827", false]],
    };
  }
  if (diagramGraph && $("chart-services")) {
    CHARTS["chart-services"] = {
      title: t("chart.services"),
      traces: diagramGraph.services.map((s, i) => [
        (r) => { const g = graphOf(r); return g && g[s.name] && g[s.name].p99_ms !== null ? g[s.name].p99_ms : null; },
        s.name, colours[i % colours.length], "solid",
      ]),
      // the deadline named on hover only, as the 100 % line above: the services' names alone fit the legend
      lines: [[timeoutMs, t("series.deadline"), "#111827", false]],
      // a logarithmic axis: a slow leaf's tens of ms turned seconds stay apart from a filled entry's tens of seconds
      log: true,
    };
  }
  const PLOT_CONFIG = { displayModeBar: false, responsive: true, staticPlot: false };

  // A trace's spec: [record field or function of the record, name, colour, dash, scale, axis, hover digits].
  function seriesOf(spec, rows) {
    const scale = spec[4] || 1;
    return rows.map((r) => {
      const value = typeof spec[0] === "function" ? spec[0](r) : r[spec[0]];
      return value === undefined || value === null ? null : value * scale;
    });
  }

  // Markers on every chart: the scenario's events, the page and the player's actions, as vertical lines (labelled
  // on the first chart): what happened sits beside what it did.
  const MARKED = { deploy_started: "#64748b", cache_flushed: "#64748b", page_fired: "#b91c1c" };
  let markers = [];

  function markersOf(rows) {
    const out = [];
    for (const r of rows) {
      for (const e of r.events) {
        const color = e.kind === "operator" ? "#1d4ed8" : MARKED[e.code];
        if (color) out.push({ x: r.label, minute: r.minute, color, text: tEvent(e), dash: e.kind === "operator" ? "dot" : "dash" });
      }
    }
    return out;
  }

  // A marker's label sits on the side of its line that has room: right of it in the chart's first half, left of it
  // in the second (a label at the right edge was cut off: "pag", "alarm udlø"); placed again as the axis grows.
  function markerLayout(withLabels) {
    const shapes = markers.map((m) => ({
      type: "line", xref: "x", yref: "paper", x0: m.x, x1: m.x, y0: 0, y1: 1,
      line: { color: m.color, width: 1, dash: m.dash },
    }));
    const half = Math.max(1, charted) / 2;
    const annotations = withLabels
      ? markers.map((m, i) => ({
          x: m.x, xref: "x", yref: "paper", y: 1 - 0.12 * (i % 3), text: m.text, showarrow: false,
          xanchor: m.minute > half ? "right" : "left", font: { size: 9, color: m.color }, bgcolor: "rgba(255,255,255,.8)",
        }))
      : [];
    return { shapes, annotations };
  }

  // The time axis spans the minutes played, on every chart alike: left to autorange, the first chart would also
  // make room for its markers' labels (plotly counts annotations in), squeezing its lines against the others'.
  const timeRange = (n) => [-0.5, Math.max(0.5, n - 0.5)];

  // A chart's title on one line when it fits its chart (a size smaller if need be), else on two lines split at
  // the space nearest its middle: some languages' titles are twice the English, and an SVG title never wraps.
  const measure = document.createElement("canvas").getContext("2d");
  function fitTitle(text, width, size) {
    const fits = (line, px) => {
      measure.font = px + "px system-ui, sans-serif";
      return measure.measureText(line).width <= width;
    };
    for (const px of [size, size - 1]) if (fits(text, px)) return { text, size: px, lines: 1 };
    const spaces = [...text.matchAll(/ /g)].map((m) => m.index);
    if (!spaces.length) return { text, size: size - 1, lines: 1 };
    const cut = spaces.reduce((a, b) => (Math.abs(b - text.length / 2) < Math.abs(a - text.length / 2) ? b : a));
    return { text: text.slice(0, cut) + "<br>" + text.slice(cut + 1), size: size - 1, lines: 2 };
  }

  // In Arabic a chart's title and legend read right to left inside a left-to-right chart: each line isolated as
  // right-to-left text ("(req/s)" at its end) while plotly still anchors it at its left, where it lays it out.
  const rtl = document.documentElement.dir === "rtl";
  const isolate = (text) => (rtl ? text.split("<br>").map((line) => "\u2067" + line + "\u2069").join("<br>") : text);

  // The records the charts hold: the first ``charted`` of ``records`` (minutes arrive in ``records`` before they
  // are charted, a frame and a chart interval later).
  let charted = 0;

  function drawCharts(rows = records) {
    charted = rows.length;
    root.dataset.charted = String(charted);
    markers = markersOf(rows);
    root.dataset.markers = String(markers.length);
    // the server's axis label (with the day on long runs); before the first minute, the run's start on a real axis
    // (not plotly's −0.4…0.4 of an empty chart)
    const x = rows.length ? rows.map((r) => r.label) : [root.dataset.startLabel];
    for (const [id, chart] of Object.entries(CHARTS)) {
      const narrow = document.getElementById(id).clientWidth < 300; // three charts abreast: a tighter legend
      // hover texts and tick labels in the page's number symbols (layout.separators), the name isolated (bidi)
      const hover = (digits) => "%{x}: %{y:,." + digits + "f}<extra>%{fullData.name}</extra>";
      const data = chart.traces.map((spec) => ({
        x, y: seriesOf(spec, rows), name: isolate(spec[1]), mode: "lines", yaxis: spec[5] || "y",
        line: { color: spec[2], dash: spec[3], width: 2 }, hovertemplate: hover(spec[6] || (spec[0] === "error_rate" ? 2 : 1)),
      }));
      for (const [value, name, color, listed] of chart.lines || []) {
        data.push({ x, y: x.map(() => value), name: isolate(name), mode: "lines", line: { color, dash: "dash", width: 1 }, hovertemplate: hover(2), showlegend: listed !== false });
      }
      const title = fitTitle(chart.title, document.getElementById(id).clientWidth - 12, narrow ? 11 : 12);
      const layout = {
        title: { text: isolate(title.text), font: { size: title.size }, x: 0.01, xanchor: "left" },
        margin: { l: 42, r: 8, t: title.lines === 1 ? 24 : 34, b: 22 }, showlegend: true,
        legend: { orientation: "h", y: -0.2, font: { size: narrow ? 9 : 10 }, itemwidth: 30 },
        xaxis: { nticks: 6, tickfont: { size: 10 }, range: timeRange(x.length) },
        yaxis: chart.log ? { tickfont: { size: 10 }, type: "log", dtick: 1 } : rows.length ? { tickfont: { size: 10 }, rangemode: "tozero" } : { tickfont: { size: 10 }, range: [0, 1] },
        font: { family: "system-ui, sans-serif" }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "#fff", separators,
        ...markerLayout(id === "chart-traffic"),
      };
      if (chart.traces.some((spec) => spec[5] === "y2")) {
        layout.yaxis2 = { overlaying: "y", side: "right", tickfont: { size: 10 }, range: [0, 100], dtick: 25, showgrid: false };
        layout.margin.r = 34;
      }
      Plotly.react(id, data, layout, PLOT_CONFIG);
    }
  }

  function extendCharts(batch) {
    charted += batch.length;
    const x = batch.map((r) => r.label);
    for (const [id, chart] of Object.entries(CHARTS)) {
      const xs = [], ys = [], idx = [];
      chart.traces.forEach((spec, i) => { xs.push(x); ys.push(seriesOf(spec, batch)); idx.push(i); });
      (chart.lines || []).forEach(([value], j) => { xs.push(x); ys.push(x.map(() => value)); idx.push(chart.traces.length + j); });
      Plotly.extendTraces(id, { x: xs, y: ys }, idx);
    }
    const fresh = markersOf(batch);
    markers.push(...fresh);
    for (const id of Object.keys(CHARTS)) {
      const update = { "xaxis.range": timeRange(charted) };
      // the labels are placed again as the axis grows (a label at the right edge moves to the left of its line)
      Plotly.relayout(id, fresh.length || (id === "chart-traffic" && markers.length) ? { ...update, ...markerLayout(id === "chart-traffic") } : update);
    }
    root.dataset.markers = String(markers.length);
  }

  // ---- status, events, alert --------------------------------------------------------------------------------
  function showStatus(r) {
    window.diagram.show($("diagram"), r);
    document.dispatchEvent(new CustomEvent("oncallsim:record", { detail: r })); // the fleet view (fleet.js) follows
    for (const key of Object.keys(fmt)) {
      const cell = $("s-" + key);
      if (!cell) continue;
      cell.textContent = fmt[key](r);
      const [level, word] = flag(key, r, pageBurn, latencyTarget);
      const mark = $("f-" + key);
      mark.textContent = word;
      mark.className = "flag " + level;
      cell.closest("tr").className = level;
    }
    showCliff(r);
    const alert = $("alert");
    const wasHidden = alert.hidden;
    if (r.events.some((e) => e.code === "page_fired") || (r.page_firing && pageSince === null)) pageSince = r.clock;
    if (r.page_firing) {
      alert.hidden = false;
      alert.textContent = t("alert.page", { burn: number(r.burn_1h, 1), clock: pageSince, budget: percent(r.budget_left, 1) });
      document.body.classList.add("paging");
    } else {
      alert.hidden = true;
      pageSince = null;
      document.body.classList.remove("paging");
    }
    // the banner coming or going moves the charts' cells, which plotly only follows on a window resize: without
    // one, a chart keeps its first height and its legend spills into the next row
    if (alert.hidden !== wasHidden) requestAnimationFrame(() => window.dispatchEvent(new Event("resize")));
  }

  // The distance to the cliff (request engine): the meter, and whether a trigger like the scenario's would heal.
  function showCliff(r) {
    const meter = $("m-cliff");
    if (!meter) return;
    meter.value = r.cliff ? Math.min(2, r.cliff.amplified) : 0;
    const survives = r.cliff ? r.cliff.survives : null;
    $("cliff-trigger").textContent = survives === null ? "" : t(survives ? "cliff.heals" : "cliff.does_not_heal");
  }

  // A mechanism engaging and letting go is a cause the log names with its minute ("10:42 limiter engaged").
  const CAUSE_EVENTS = {
    limiter_engaged: "cause", retry_budget_exhausted: "cause",
    limiter_released: "cause cleared", retry_budget_recovered: "cause cleared",
  };

  function logEvents(r) {
    const list = $("events");
    for (const event of [...r.events].reverse()) { // newest first, and within a minute too
      const item = document.createElement("li");
      item.className = event.kind + (CAUSE_EVENTS[event.code] ? " " + CAUSE_EVENTS[event.code] : ""); // operator, page or system: the server says which
      item.dataset.code = event.code;
      item.dir = "auto"; // a line reads in its own script's direction (a Latin metric name inside Arabic stays whole)
      const time = document.createElement("time");
      time.textContent = r.clock;
      item.append(time, " ", tEvent(event));
      list.prepend(item);
    }
  }

  // ---- controls ------------------------------------------------------------------------------------------
  // the controls form never submits (no inline handler: the page's CSP allows no inline script)
  $("controls").addEventListener("submit", (event) => event.preventDefault());
  // The controls are rendered from the registry: found here by their kind, not listed by name.
  const SLIDERS = [...document.querySelectorAll("#controls input[type=range]")].map((el) => el.name);
  const SWITCHES = [...document.querySelectorAll("#controls input[role=switch]")].map((el) => el.name);
  const CHOICES = [...document.querySelectorAll("#controls select[data-kind=choice]")].map((el) => el.name);

  function valueText(name, value) {
    const input = $("c-" + name);
    if (typeof value === "boolean") return value ? t("value.on") : t("value.off");
    if (typeof value === "string") { // a choice: its option's (translated) words
      const option = input && input.tagName === "SELECT" ? [...input.options].find((o) => o.value === value) : null;
      return option ? option.textContent : value;
    }
    if (input.dataset.kind === "instance") return "i-" + String(value).padStart(2, "0"); // as the fleet view names it
    if (input.dataset.kind === "fraction") return percent(value, Number.isInteger(100 * value) ? 0 : 1);
    if (input.dataset.kind === "service") { // a chain's service's setting: its value as sent, never rounded
      if (input.dataset.unit === "ms") return t("unit.ms", { n: exact(value) });
      if (input.dataset.unit === "instances") return window.i18n.tn("unit.instances", value);
      return exact(value);
    }
    if (input.dataset.unit === "ms") return t("unit.ms", { n: number(Math.round(value)) });
    if (input.dataset.unit === "instances") return window.i18n.tn("unit.instances", value);
    if (input.dataset.unit === "s") return t("unit.seconds", { n: number(Math.round(value)) });
    return number(value, Number.isInteger(value) ? 0 : 2);
  }

  function showControlValue(name, value) {
    const out = $("o-" + name);
    if (out) out.textContent = valueText(name, value);
  }

  // An action as people read it: the control's label (from the page, translated) and its value with the unit.
  function actionText(action) {
    const input = $("c-" + action.control);
    const label = input ? input.dataset.label : action.control;
    return action.value === undefined ? label : t("action.value", { control: label, value: valueText(action.control, action.value) });
  }

  // What the controls show: the settings in force, then the logged actions not yet applied (they take effect
  // next minute), then what the operator just asked for and the server has not acknowledged yet; without the
  // last two, a minute arriving in between would flip a switch back under the operator's hand.
  const requested = {};

  function effectiveControls(s) {
    const shown = { ...s.controls };
    for (const a of s.pending || []) if (a.value !== undefined) shown[a.control] = a.value;
    for (const [name, value] of Object.entries(requested)) {
      if (shown[name] === value) delete requested[name]; // the server has it
      else shown[name] = value;
    }
    return shown;
  }

  function showControls(controls) {
    for (const name of SLIDERS) {
      if (editing.has(name)) continue;
      const input = $("c-" + name);
      const scale = Number(input.dataset.scale || 1);
      input.value = String(Math.round(controls[name] / scale));
      showControlValue(name, controls[name]);
    }
    for (const name of SWITCHES) {
      $("c-" + name).checked = controls[name];
      $("c-" + name).setAttribute("aria-checked", String(controls[name]));
    }
    for (const name of CHOICES) $("c-" + name).value = controls[name];
    showResilience(controls);
  }

  // The Resilience group's summary line: which of its mechanisms are on (a switch on, a choice other than its
  // first, "off"-like one, a number above 0), so the folded group still says what protects the service.
  const resilience = $("resilience");
  const GROUP = resilience ? resilience.dataset.controls.split(" ").filter(Boolean) : [];
  // A mechanism's own setting (the registry's only_with: a retry's backoff and budget, the throttling preset)
  // is said only while its mechanism is on, and only when it differs from its default.
  function isOn(name, value, controls) {
    const input = $("c-" + name);
    const parent = input ? input.dataset.onlyWith : "";
    if (parent) {
      if (controls[parent] === undefined || !isOn(parent, controls[parent], controls)) return false;
      return typeof value === "number" ? value !== Number(input.dataset.default) : String(value) !== input.dataset.default;
    }
    if (typeof value === "boolean") return value;
    if (input && input.tagName === "SELECT") return value !== input.options[0].value;
    return typeof value === "number" && value > 0 && input !== null && Number(input.min) === 0; // 0 = off
  }
  function showResilience(controls) {
    if (!resilience) return;
    const on = GROUP.filter((name) => controls[name] !== undefined && isOn(name, controls[name], controls));
    const said = on.map((name) => (typeof controls[name] === "boolean" ? $("c-" + name).dataset.label : actionText({ control: name, value: controls[name] })));
    const text = on.length ? t("resilience.on", { list: said.join(" · ") }) : t("resilience.none");
    if ($("resilience-state").textContent !== text) $("resilience-state").textContent = text; // announced once (aria-live)
    resilience.dataset.on = String(on.length > 0);
  }
  // what the operator just asked for shows at once (the controls' own listeners, on the target, ran first)
  if (resilience) resilience.addEventListener("change", () => { if (state) showResilience(effectiveControls(state)); });

  // The newest state wins whatever the order in which messages reach the screen: a minute's state waiting for
  // the next animation frame must not overwrite a later pause ("Pause" shown while the server is paused).
  // The numbers count within one server process (its epoch): a restarted server's states are followed at once.
  let shownSeq = 0;
  let shownEpoch = null;

  function showState(s, fresh) {
    if (!fresh && s.seq !== undefined && s.epoch === shownEpoch && s.seq < shownSeq) return;
    if (s.seq !== undefined) shownSeq = s.seq;
    if (s.epoch !== shownEpoch) noteShownFor = 0; // a restarted server's stops are numbered afresh too
    shownEpoch = s.epoch;
    state = s;
    $("clock").textContent = s.clock;
    $("pause").textContent = s.paused ? t("button.resume") : t("button.pause");
    $("pause").setAttribute("aria-pressed", String(s.paused));
    $("step").disabled = !s.paused || s.done;
    $("speed").value = String(s.speed);
    showControls(effectiveControls(s));
    const over = s.done;
    for (const el of document.querySelectorAll("#controls input, #controls button, #pause, .run-end button")) el.disabled = over;
    if (over && s.ended !== "abandoned") $("debrief-link").hidden = false;
    $("replay").hidden = !over || !records.length;
    // a finished run has nothing to pause or step: its two buttons leave the header to Debrief and Watch again, so
    // the header keeps one line (at 1440 px it wrapped in Danish once those two appeared)
    $("pause").hidden = over;
    $("step").hidden = over;
    showPreparing(s.done ? null : s.preparing);
    showSlowed(s.done || s.paused ? null : s.slowed, s.speed);
    root.dataset.minute = String(s.minute);
    root.dataset.paused = String(s.paused);
    root.dataset.speed = String(s.speed);
    explainPause(s);
    document.dispatchEvent(new CustomEvent("oncallsim:state", { detail: s })); // a chain's services panel follows
  }

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  // the run's engine is being compiled (once on this machine) by the server's preparer: the clock waits, and
  // this says how far it is, so the page never looks frozen
  function showPreparing(p) {
    const box = $("preparing");
    root.dataset.preparing = p ? p.state : "";
    if (!p) { box.hidden = true; return; }
    box.hidden = false;
    box.textContent = p.state === "failed"
      ? t("preparing.failed", { engine: p.name, message: p.message })
      : t("preparing.engine", { engine: p.name, share: percent(p.share, 0), left: p.seconds_left === null ? "?" : number(p.seconds_left, 0) });
  }

  // the server cannot keep this run at its speed (its minutes cost more than the machine has): it plays slower,
  // and the other runs keep theirs (web/workers.py)
  function showSlowed(slowed, speed) {
    const box = $("slowed");
    root.dataset.slowed = slowed === null || slowed === undefined ? "" : String(slowed);
    box.hidden = slowed === null || slowed === undefined;
    if (!box.hidden) box.textContent = t("run.slowed", { actual: number(slowed, 1), speed });
  }

  function act(control, value) {
    const message = { type: "action", control };
    if (value !== undefined) {
      message.value = value;
      requested[control] = value;
    }
    send(message);
  }
  // a chain's services panel (services.js) sends its settings the same way
  document.addEventListener("oncallsim:act", (e) => act(e.detail.control, e.detail.value));

  for (const name of SLIDERS) {
    const input = $("c-" + name);
    const scale = Number(input.dataset.scale || 1);
    const value = () => (scale === 1 ? Number(input.value) : Math.round(Number(input.value)) * scale);
    input.addEventListener("input", () => { editing.add(name); showControlValue(name, value()); });
    // Escape abandons a drag not yet let go: the setting in force comes back
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && editing.delete(name) && state) showControls(effectiveControls(state));
    });
    const whole = input.dataset.kind === "int";
    input.addEventListener("change", () => { editing.delete(name); act(name, whole ? Math.round(value()) : Number(value().toFixed(4))); });
  }
  for (const name of SWITCHES) {
    $("c-" + name).addEventListener("change", (e) => act(name, e.target.checked));
  }
  for (const name of CHOICES) {
    $("c-" + name).addEventListener("change", (e) => act(name, e.target.value));
  }
  // Rolling back when no bad build is live (or while a rollback already runs) still bills the fleet double:
  // the console asks first instead of accepting it silently.
  const confirmBox = $("confirm");
  // Asked with the mouse (a click's detail counts its presses; a key's click has none), the dialog leaves no focus
  // behind on the button it returns to, so Space afterwards pauses; asked from the keyboard, the focus goes back
  // to the button as usual.
  function confirmThen(message, yesLabel, yes, byPointer) {
    $("confirm-text").textContent = message;
    $("confirm-yes").textContent = yesLabel;
    confirmBox.returnValue = "";
    confirmBox.onclose = () => {
      if (byPointer) requestAnimationFrame(() => document.activeElement && document.activeElement.blur());
      if (confirmBox.returnValue === "yes") yes();
    };
    confirmBox.showModal();
  }
  $("confirm-yes").addEventListener("click", () => confirmBox.close("yes"));
  $("confirm-no").addEventListener("click", () => confirmBox.close("no"));

  for (const button of document.querySelectorAll("[data-button]")) {
    button.addEventListener("click", (e) => {
      const name = button.dataset.button;
      const last = records[records.length - 1];
      const queued = state && state.pending.some((a) => a.control === "rollback");
      const byPointer = e.detail > 0;
      if (name === "rollback" && ((last && last.rollback_active) || queued)) {
        confirmThen(t("confirm.rollback_running"), t("confirm.rollback_yes"), () => act(name), byPointer);
      } else if (name === "rollback" && last && last.bad_build_share === 0) {
        confirmThen(t("confirm.rollback_no_bad_build"), t("confirm.rollback_yes"), () => act(name), byPointer);
      } else act(name);
    });
  }
  // "End and debrief": once the debrief is computed, the page goes to it
  let endRequested = false;
  $("end-run").addEventListener("click", () => confirmThen(t("confirm.end"), t("confirm.end_yes"), () => {
    endRequested = true;
    send({ type: "end" });
  }));
  // The Debrief link while the debrief is still being computed (30 s and more for a chain): the page stays here, says
  // it will open it, and goes when it is ready (a plain link left the person on a blank loading page meanwhile)
  $("debrief-link").addEventListener("click", (e) => {
    if (root.dataset.debrief !== "computing") return;
    e.preventDefault();
    endRequested = true;
    root.dataset.debriefWanted = "true";
    flash(t("run.debrief_soon"), "info", true);
  });
  $("abandon-run").addEventListener("click", () =>
    confirmThen(t("confirm.abandon"), t("confirm.abandon_yes"), () => send({ type: "abandon" })));
  $("pause").addEventListener("click", () => send({ type: state && state.paused ? "resume" : "pause" }));
  $("step").addEventListener("click", () => send({ type: "step" }));
  $("speed").addEventListener("change", (e) => send({ type: "speed", value: Number(e.target.value) }));
  // The run's keys — Space pauses, S steps, M goes to the scenario's main control — act only when no control has
  // the focus: a focused control keeps its own keys (Space and Enter switch a checkbox, press a button, arrows move
  // a slider). A button clicked with the mouse gives the focus back (below), so Space after clicking "Roll back"
  // pauses rather than rolling back again.
  const CONTROL = "input, select, textarea, button, a[href], summary, [contenteditable], [tabindex]:not([tabindex='-1']), dialog[open]";
  const mainControl = root.dataset.mainControl ? $("c-" + root.dataset.mainControl) : null;
  document.addEventListener("keydown", (e) => {
    if (e.target.closest(CONTROL) || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.code === "Space") { e.preventDefault(); if (!e.repeat) $("pause").click(); }
    else if (e.key === "s" || e.key === "S") { e.preventDefault(); $("step").click(); }
    else if ((e.key === "m" || e.key === "M") && mainControl) {
      e.preventDefault();
      const group = mainControl.closest("details"); // a control inside the folded Resilience group: unfold it
      if (group && !group.open) group.open = true;
      mainControl.focus();
      mainControl.scrollIntoView({ block: "center" });
    }
  });
  // Enter switches a focused switch too (a checkbox answers only Space by itself): the controls', Sound, Notify
  for (const box of document.querySelectorAll("input[role=switch]")) {
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); box.click(); }
    });
  }
  // a pointer's click leaves no focus behind on the run's buttons: the keys go back to the run
  for (const button of document.querySelectorAll(".transport button, [data-button], .run-end button")) {
    button.addEventListener("pointerup", (e) => { if (e.pointerType) requestAnimationFrame(() => button.blur()); });
  }
  // the skip link's target takes the focus; the next Tab then reaches the first control
  document.querySelector(".skip-link")?.addEventListener("click", (e) => {
    e.preventDefault();
    $("controls-title").focus();
  });
  $("share").addEventListener("click", (e) => {
    if (navigator.clipboard && window.isSecureContext) {
      e.preventDefault();
      navigator.clipboard.writeText(new URL($("share").getAttribute("href"), location.href).href)
        .then(() => flash(t("share.copied"), "info"));
    }
  });

  window.alerts.init(flash);

  // a message for a few seconds; a lasting one (the debrief being computed) stays until the next replaces it
  function flash(message, kind, lasting) {
    const box = $("error");
    box.hidden = false;
    box.className = "error-banner " + (kind || "bad");
    box.textContent = message;
    clearTimeout(flash.timer);
    if (!lasting) flash.timer = setTimeout(() => { box.hidden = true; }, 6000);
  }

  // ---- pacing: the briefing, guided pauses, and the page reaching the player ------------------------------
  const briefing = $("briefing");
  const note = $("note");
  const pageTitle = document.title;
  let noteShownFor = 0; // the state seq whose pause the note explained

  function openBriefing() {
    const opening = state && state.paused && state.minute === 0 && !state.done;
    $("briefing-go").textContent = opening ? t("briefing.start") : t("briefing.close");
    if (!briefing.open) briefing.showModal();
    // a long briefing opens at its top (the focused button stays in view: the actions are sticky)
    briefing.scrollTop = 0;
    requestAnimationFrame(() => { briefing.scrollTop = 0; });
  }
  $("show-briefing").addEventListener("click", openBriefing);
  $("briefing-go").addEventListener("click", () => {
    briefing.close();
    if (!(state && state.paused && state.minute === 0 && !state.done)) return;
    if (root.dataset.tutorial === "true") window.tour.start(() => send({ type: "resume" }));
    else send({ type: "resume" });
  });

  const NOTES = { page: t("note.page"), incident: t("note.incident") };
  // the scenario's own hints (its file's incident_hint and page_hint, in the page's language)
  const HINTS = { incident: note.dataset.incidentHint || "", page: note.dataset.pageHint || "" };
  let incidentExplained = false;
  // the server stopped the clock (guided: the incident began, or the page fired; normal: the page fired); say why,
  // and on guided hint. A page in the incident's own minute (a flash crowd, a retry storm) is one stop that says both.
  function explainPause(s) {
    if (!s.paused || !s.pause_reason || s.done || noteShownFor >= s.seq) return;
    noteShownFor = s.seq;
    $("note-title").textContent = NOTES[s.pause_reason] || "";
    const said = [];
    const guided = s.difficulty === "guided"; // normal stops at the page too, without the scenario's hints
    if (s.pause_reason === "page") said.push(t("hint.page", { x: number(pageBurn, 1) }));
    if (guided && (s.pause_reason === "incident" || !incidentExplained)) said.push(HINTS.incident);
    if (guided && s.pause_reason === "page") said.push(HINTS.page);
    if (!guided && s.pause_reason === "incident") said.push(t("hint.incident_normal")); // trouble from the start
    incidentExplained = true;
    $("note-text").textContent = said.filter(Boolean).join(" ");
    if (!note.open && !briefing.open) note.showModal();
  }
  $("note-go").addEventListener("click", () => { note.close(); send({ type: "resume" }); });
  $("note-stay").addEventListener("click", () => note.close());

  // Replay playback: a finished run watched again minute by minute, at the chosen speed, from the records the
  // page already holds (nothing is recomputed, the controls stay disabled). Pressed again, it stops at the end.
  let replaying = null;
  let replayAll = [];
  function stopReplay(all) {
    clearInterval(replaying);
    replaying = null;
    for (const r of all.slice(records.length)) { records.push(r); unrendered.push(r); }
    scheduleRender();
    $("replay").textContent = t("replay.start");
    root.dataset.replaying = "false";
  }
  $("replay").addEventListener("click", () => {
    if (replaying !== null) { stopReplay(replayAll); return; }
    const all = records.slice();
    records = [];
    unrendered = [];
    chartPending = [];
    $("events").replaceChildren();
    drawCharts();
    root.dataset.replaying = "true";
    $("replay").textContent = t("replay.stop");
    const perMinute = Number($("speed").selectedOptions[0].dataset.minuteMs);  // the server's: a speed's minute
    const timer = setInterval(() => {
      if (records.length >= all.length) { stopReplay(all); return; }
      const r = all[records.length];
      records.push(r);
      unrendered.push(r);
      root.dataset.records = String(records.length);
      scheduleRender();
    }, perMinute);
    replaying = timer;
    replayAll = all;
  });

  function pageFired(r) {
    if (replaying !== null) return; // a replay shows the page, it does not ring it again
    root.dataset.alerted = String(Number(root.dataset.alerted || 0) + 1);
    window.alerts.ring(t("alert.page", { burn: number(r.burn_1h, 1), clock: r.clock, budget: percent(r.budget_left, 1) }));
  }

  function showTitle(r) {
    document.title = r && r.page_firing ? t("title.paging", { title: pageTitle }) : pageTitle;
  }

  // ---- rendering: at most one frame's work however fast minutes arrive (16× must not fall behind) -------
  // Status and events follow every frame; charts redraw at most every CHART_INTERVAL_MS with all new minutes.
  let unrendered = [];
  let chartPending = [];
  let latestState = null;
  let frameRequested = false;
  let chartTimer = null;
  let lastChartDraw = -Infinity;
  const CHART_INTERVAL_MS = 200;

  function scheduleRender() {
    if (frameRequested) return;
    frameRequested = true;
    requestAnimationFrame(render);
  }

  function render() {
    frameRequested = false;
    if (unrendered.length) {
      unrendered.forEach(logEvents);
      for (const r of unrendered) if (r.events.some((e) => e.code === "page_fired")) pageFired(r);
      showStatus(unrendered[unrendered.length - 1]);
      showTitle(unrendered[unrendered.length - 1]);
      chartPending.push(...unrendered);
      unrendered = [];
      scheduleCharts();
    }
    if (latestState) { showState(latestState); latestState = null; }
  }

  function scheduleCharts() {
    if (chartTimer !== null) return;
    const wait = Math.max(0, lastChartDraw + CHART_INTERVAL_MS - performance.now());
    chartTimer = setTimeout(flushCharts, wait);
  }

  function flushCharts() {
    chartTimer = null;
    if (!chartPending.length) return;
    const batch = chartPending;
    chartPending = [];
    // Charts drawn empty (no minute yet, or a replay's start) are drawn again with their first minutes: extended,
    // they would keep the empty chart's fixed 0–1 axis and its placeholder point. Counted by what the charts
    // hold, not by ``records``: a minute arriving between the frame and this flush is in ``records`` already.
    if (charted === 0) drawCharts(records.slice(0, batch.length)); else extendCharts(batch);
    lastChartDraw = performance.now();
    root.dataset.charted = String(charted);
  }

  // ---- the socket ----------------------------------------------------------------------------------------
  function onMessage(message) {
    switch (message.type) {
      case "snapshot":
        records = message.records;
        unrendered = [];
        chartPending = [];
        $("events").replaceChildren();
        records.forEach(logEvents);
        drawCharts();
        if (records.length) {
          // the page's start is the last "page fired" of the records, not the moment this browser connected
          const fired = [...records].reverse().find((r) => r.events.some((e) => e.code === "page_fired"));
          pageSince = fired && records[records.length - 1].page_firing ? fired.clock : null;
          showStatus(records[records.length - 1]);
          showTitle(records[records.length - 1]);
        }
        latestState = null;
        showState(message.state, true); // a snapshot restarts the numbering (the server may have restarted)
        if (message.state.paused && message.state.minute === 0 && !message.state.done) openBriefing();
        finished = message.state.done;
        break;
      case "minute":
        records.push(message.record);
        unrendered.push(message.record);
        latestState = message.state;
        scheduleRender();
        break;
      case "state":
        latestState = null; // a minute's state still waiting for the next frame is older than this one
        showState(message);
        break;
      case "ack":
        flash(t("ack.queued", { control: actionText(message.action), clock: state ? state.clock : "" }), "info");
        break;
      case "error":
        flash(message.localized || message.message, "bad"); // the server's refusal in the page's language
        document.dispatchEvent(new CustomEvent("oncallsim:refused", { detail: { field: message.field } }));
        for (const name of Object.keys(requested)) delete requested[name];
        if (state) showControls(effectiveControls(state));
        break;
      case "over": // at once; "finished" follows when the debrief is computed (30 s and more on the request engine)
        showState(message.state);
        flash(t("run.over"), "info", true);
        root.dataset.debrief = "computing";
        break;
      case "debrief_progress": // the debrief's replays (hands-off, the playbook, the mechanisms), as they end
        flash(t("run.debrief_progress", { done: message.done, total: message.total }) + (root.dataset.debriefWanted === "true" ? " " + t("run.debrief_soon") : ""), "info", true);
        root.dataset.debriefProgress = `${message.done}/${message.total}`;
        break;
      case "finished":
        finished = true;
        showState(message.state);
        flash(message.state.ended === "abandoned" ? t("run.abandoned") : t("run.finished"), "info");
        root.dataset.debrief = message.debrief_url ? "ready" : "none";
        if (root.dataset.tutorial === "true" && message.state.ended !== "abandoned") window.tour.last();
        else if (endRequested && message.debrief_url) location.assign($("debrief-link").href);
        break;
    }
    root.dataset.records = String(records.length);
  }

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    // ?lang=: the server writes its refusals in the page's language (web/refusals: the English stays in message)
    const lang = document.documentElement.lang;
    const query = lang && lang !== "en" ? `?lang=${encodeURIComponent(lang)}` : "";
    socket = new WebSocket(`${scheme}://${location.host}/api/runs/${runId}/ws${query}`);
    socket.addEventListener("open", () => { retry = 0; root.dataset.connected = "true"; });
    socket.addEventListener("message", (e) => onMessage(JSON.parse(e.data)));
    socket.addEventListener("close", () => {
      root.dataset.connected = "false";
      if (finished) return;
      retry = Math.min(retry + 1, 5);
      setTimeout(connect, 250 * 2 ** retry); // the server keeps the run; a reconnect gets it back where it is
    });
  }
  connect();
})();
