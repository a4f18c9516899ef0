// The page's translation layer: every user-facing string comes from the JSON catalog injected by the server, and
// every number is written the page language's way (Intl.NumberFormat, with the decimal and grouping symbols the
// server's CLDR data gives: a browser missing a locale's data still writes 12,3 in Danish and Armenian).
(function () {
  "use strict";
  const catalog = JSON.parse(document.getElementById("catalog").textContent);
  const html = document.documentElement;
  const lang = html.lang || "en";
  const symbols = { decimal: html.dataset.decimal || ".", group: html.dataset.group || "," };

  // t(KEY, {n: 3}) -> the catalog's text with {n} filled in; a missing key shows itself, loudly.
  function t(key, params) {
    let text = Object.prototype.hasOwnProperty.call(catalog, key) ? catalog[key] : "⟦" + key + "⟧";
    if (params) {
      for (const [name, value] of Object.entries(params)) text = text.split("{" + name + "}").join(String(value));
    }
    return text;
  }

  const has = (key) => Object.prototype.hasOwnProperty.call(catalog, key);
  const plurals = new Intl.PluralRules(lang);

  // tn(KEY, n, params): the plural form the language needs for n (KEY.one, KEY.few, … KEY.other), never "s" glued on
  function tn(key, n, params) {
    const form = plurals.select(n);
    const chosen = [key + "." + form, key + ".other", key].find(has) || key;
    return t(chosen, { n: number(n), ...(params || {}) });
  }

  // ---- numbers ------------------------------------------------------------------------------------------------
  const formatters = new Map();
  function formatter(digits) {
    if (!formatters.has(digits)) {
      formatters.set(digits, new Intl.NumberFormat(lang, { minimumFractionDigits: digits, maximumFractionDigits: digits }));
    }
    return formatters.get(digits);
  }

  // number(1234.5, 1) -> "1.234,5" in Danish, "1,234.5" in English
  function number(x, digits) {
    const parts = formatter(digits || 0).formatToParts(x);
    return parts.map((p) => (p.type === "decimal" ? symbols.decimal : p.type === "group" ? symbols.group : p.value)).join("");
  }
  // percent(0.123, 1) -> "12.3%" in English, "12,3 %" in Danish; money(8.83) -> "$8.83", "8,83 USD": the server's CLDR
  // patterns (<html data-percent data-money>), so the status table and the debrief write them alike
  const patterns = { percent: html.dataset.percent || "{n}%", money: html.dataset.money || "${n}" };
  // a value as it was set, with no digit added or dropped (up to 4 decimals): 50.5 ms, 0.999, 3
  const exact = (x) => number(x, Math.min(4, (String(x).split(".")[1] || "").length));
  const percent = (x, digits) => patterns.percent.replace("{n}", number(100 * x, digits || 0));
  const money = (x) => patterns.money.replace("{n}", number(x, 2));
  // plotly's layout.separators: its tick labels and hover texts use the same symbols
  const separators = symbols.decimal + symbols.group;

  // Model events arrive structured ({code, args, kind, text}): the catalog keys them by code, by the plural
  // form of their count ({n}), or, for a setting, by the control (and on/off for a switch). ``text`` is the
  // English fallback for a code the catalog does not know.
  function tEvent(event) {
    const args = event.args || {};
    // a chain's service's setting ("recs.timeout_ms"): in the Services panel's words (services.js)
    // services.js's, once it has run: before, window.services is the page's <details id="services"> element
    const panel = window.services && typeof window.services.label === "function" ? window.services : null;
    const service = event.code === "setting" && panel ? panel.label(String(args.name)) : null;
    if (service) {
      const value = panel.isSwitch(String(args.name)) ? t(args.value ? "value.on" : "value.off")
        : exact(args.value);
      return t("event.setting.service", { setting: service, value });
    }
    let key = "event." + event.code;
    if (event.code === "setting") {
      key += "." + args.name;
      if (typeof args.value === "boolean") key += args.value ? ".on" : ".off";
    } else if (typeof args.n === "number") {
      key += has(key + "." + plurals.select(args.n)) ? "." + plurals.select(args.n) : ".other";
    }
    const shown = { ...args };
    // a setting's value as its control shows it (a fraction in percent), any other number in the page's symbols
    const control = event.code === "setting" ? document.getElementById("c-" + args.name) : null;
    for (const [name, value] of Object.entries(shown)) {
      if (typeof value !== "number") continue;
      if (name === "instance") shown[name] = "i-" + String(value).padStart(2, "0"); // as the fleet view names it
      else if (name === "value" && control && control.dataset.kind === "fraction") shown[name] = percent(value, Number.isInteger(100 * value) ? 0 : 1);
      else shown[name] = number(value, Number.isInteger(value) ? 0 : Math.min(3, (String(value).split(".")[1] || "").length));
    }
    return has(key) ? t(key, shown) : event.text;
  }

  window.i18n = { t, tn, tEvent, catalog, lang, number, exact, percent, money, separators };
})();
