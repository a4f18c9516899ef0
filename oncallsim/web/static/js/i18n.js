// The page's translation layer: every user-facing string comes from the JSON catalog injected by the server.
(function () {
  "use strict";
  const catalog = JSON.parse(document.getElementById("catalog").textContent);

  // t(KEY, {n: 3}) -> the catalog's text with {n} filled in; a missing key shows itself, loudly.
  function t(key, params) {
    let text = Object.prototype.hasOwnProperty.call(catalog, key) ? catalog[key] : "⟦" + key + "⟧";
    if (params) {
      for (const [name, value] of Object.entries(params)) text = text.split("{" + name + "}").join(String(value));
    }
    return text;
  }

  const has = (key) => Object.prototype.hasOwnProperty.call(catalog, key);
  const plurals = new Intl.PluralRules(document.documentElement.lang || "en");

  // Model events arrive structured ({code, args, kind, text}): the catalog keys them by code, by the plural
  // form of their count ({n}), or, for a setting, by the control (and on/off for a switch). ``text`` is the
  // English fallback for a code the catalog does not know.
  function tEvent(event) {
    const args = event.args || {};
    let key = "event." + event.code;
    if (event.code === "setting") {
      key += "." + args.name;
      if (typeof args.value === "boolean") key += args.value ? ".on" : ".off";
    } else if (typeof args.n === "number") {
      key += has(key + "." + plurals.select(args.n)) ? "." + plurals.select(args.n) : ".other";
    }
    return has(key) ? t(key, args) : event.text;
  }

  window.i18n = { t, tEvent, catalog };
})();
