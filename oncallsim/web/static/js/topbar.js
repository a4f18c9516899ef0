// The top bar stays one line: when its contents would wrap (a language with long words, the end-of-run buttons
// appearing), the site's links fold into a menu beside the language picker. Measured, not guessed per language:
// unfolded first, folded if the bar then holds more than one row.
(function () {
  "use strict";
  const bar = document.querySelector(".topbar");
  if (!bar) return;
  // one row is as tall as the tallest item in it; more than one and a half of those: the bar has wrapped
  const rowHeight = () => Math.max(...Array.from(bar.children, (item) => item.getBoundingClientRect().height));
  function fit() {
    bar.classList.remove("compact");
    const style = getComputedStyle(bar);
    const inner = bar.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    // on a phone the bar may still wrap when folded; the links then take no row of their own
    if (inner > 1.5 * rowHeight()) bar.classList.add("compact");
  }
  fit();
  if (typeof ResizeObserver === "function") new ResizeObserver(fit).observe(bar);
  else window.addEventListener("resize", fit);
  // the run's buttons change (hidden → shown) without resizing the window
  new MutationObserver(fit).observe(bar, { subtree: true, attributes: true, attributeFilter: ["hidden"] });
})();
