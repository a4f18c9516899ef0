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

  // Model events arrive as English sentences with numbers ("scaled out: 3 instances starting"); the catalog
  // keys them with the numbers replaced by {n}.
  function tEvent(event) {
    const numbers = event.match(/-?\d+(\.\d+)?/g) || [];
    const key = "event." + event.replace(/-?\d+(\.\d+)?/g, "{n}");
    if (!Object.prototype.hasOwnProperty.call(catalog, key)) return event;
    let i = 0;
    return catalog[key].replace(/\{n\}/g, () => numbers[i++]);
  }

  window.i18n = { t, tEvent, catalog };
})();
