// Game day: create a room, then show its two links (each carries its token in the fragment, never sent to a server log).
(function () {
  "use strict";
  const S = JSON.parse(document.getElementById("gameday-text").textContent);
  const $ = (id) => document.getElementById(id);
  const fill = (text, args) => text.replace(/%\((\w+)\)s/g, (_m, k) => (args && k in args ? String(args[k]) : ""));

  async function readToml() {
    const file = $("room-file").files[0];
    return file ? await file.text() : null;
  }

  $("new-room").addEventListener("submit", async (event) => {
    event.preventDefault();
    $("new-error").hidden = true;
    const toml = await readToml();
    const body = {
      scenario: $("room-scenario").value,
      seed: Number($("room-seed").value),
      speed: Number($("room-speed").value),
      title: $("room-title").value,
    };
    if ($("room-engine").value) body.engine = $("room-engine").value;
    if (toml !== null) {
      const match = toml.match(/^\s*id\s*=\s*"([^"]+)"/m);
      if (!match) {
        $("new-error").textContent = S.toml_id;
        $("new-error").hidden = false;
        return;
      }
      body.scenario = match[1];
      body.scenario_toml = toml;
    }
    const response = await fetch("/api/gameday/rooms", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) {
      $("new-error").textContent = fill(S.error, { message: data.localized || data.error });
      $("new-error").hidden = false;
      return;
    }
    const origin = window.location.origin;
    $("link-player").value = origin + data.player_url;
    $("link-facilitator").value = origin + data.facilitator_url;
    $("open-facilitator").href = data.facilitator_url;
    $("links-note").textContent = S.created;
    $("links").hidden = false;
  });

  for (const which of ["player", "facilitator"]) {
    $("copy-" + which).addEventListener("click", () => {
      const input = $("link-" + which);
      input.select();
      if (navigator.clipboard) navigator.clipboard.writeText(input.value).catch(() => {});
    });
  }
})();
