// How the page reaches the player beyond the banner: a short tone if the header's Sound switch is on (off by
// default), a browser notification if Notify is on and the browser allows it. Both choices are remembered.
(function () {
  "use strict";
  const t = (k, p) => window.i18n.t(k, p);
  const $ = (id) => document.getElementById(id);

  function init(flash) {
    const sound = $("sound");
    const notify = $("notify");
    sound.checked = localStorage.getItem("oncallsim.sound") === "on";
    notify.checked = localStorage.getItem("oncallsim.notify") === "on" && window.Notification && Notification.permission === "granted";
    sound.addEventListener("change", () => localStorage.setItem("oncallsim.sound", sound.checked ? "on" : "off"));
    notify.addEventListener("change", () => {
      if (!notify.checked) { localStorage.setItem("oncallsim.notify", "off"); return; }
      if (!window.Notification) { notify.checked = false; flash(t("notify.unsupported"), "bad"); return; }
      Notification.requestPermission().then((answer) => {
        notify.checked = answer === "granted";
        localStorage.setItem("oncallsim.notify", notify.checked ? "on" : "off");
        if (!notify.checked) flash(t("notify.denied"), "bad");
      });
    });
  }

  function tone() {
    const Audio = window.AudioContext || window.webkitAudioContext;
    if (!Audio) return;
    const ctx = new Audio();
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.frequency.value = 880;
    gain.gain.setValueAtTime(0.15, ctx.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.001, ctx.currentTime + 0.6);
    osc.connect(gain).connect(ctx.destination);
    osc.start();
    osc.stop(ctx.currentTime + 0.6);
    osc.onended = () => ctx.close();
  }

  // the page fired now (never for a page replayed from a snapshot): the tone and the notification, if chosen
  function ring(text) {
    if ($("sound").checked) tone();
    if ($("notify").checked && window.Notification && Notification.permission === "granted") {
      new Notification(t("notify.title"), { body: text });
    }
  }

  window.alerts = { init, ring };
})();
