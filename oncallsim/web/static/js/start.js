// A new run's form: the speed list offers only what the chosen difficulty allows (each difficulty option carries its
// data-max-speed from the server's pacing rules); a speed the difficulty does not allow gives way to its fastest.
(function () {
  "use strict";
  for (const difficulty of document.querySelectorAll("select[name=difficulty][data-speeds]")) {
    const speed = document.getElementById(difficulty.dataset.speeds);
    if (!speed) continue;
    const follow = () => {
      const max = Number(difficulty.selectedOptions[0].dataset.maxSpeed);
      for (const option of speed.options) {
        option.disabled = Number(option.value) > max;
        option.hidden = option.disabled;
      }
      if (Number(speed.value) > max) speed.value = String(max);
    };
    difficulty.addEventListener("change", follow);
    follow();
  }
})();
