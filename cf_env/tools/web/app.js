// The browser side of `python -m cf_env.tools.serve`: forms, the board, and one request at a
// time to the JSON API. Every picture is SVG made by the server; nothing is loaded from
// anywhere but this server.
"use strict";

const $ = (id) => document.getElementById(id);
let state = null; // the last view the server sent
let busy = false; // a request is in flight: clicks wait
let runTimer = null; // Watch: the running timer

function showError(text) {
  const box = $("error");
  box.textContent = text || "";
  box.hidden = !text;
}

async function api(method, url, body, raw) {
  const init = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = raw ? body : JSON.stringify(body);
  }
  const response = await fetch(url, init);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

async function request(method, url, body, raw) {
  if (busy) return null;
  busy = true;
  document.body.classList.add("busy");
  try {
    const data = await api(method, url, body, raw);
    showError("");
    render(data);
    return data;
  } catch (err) {
    showError(err.message);
    stopRun();
    return null;
  } finally {
    busy = false;
    document.body.classList.remove("busy");
  }
}

// "target_score=200, start_search=all_draw" -> {target_score: 200, start_search: "all_draw"}
function parseVariants(text) {
  const out = {};
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const match = /^(\w+)\s*=\s*(.+)$/.exec(part);
    if (!match) throw new Error(`variants: "${part}" is not name=value`);
    const value = match[2].trim();
    out[match[1]] = /^-?\d+$/.test(value) ? Number(value)
      : value === "true" ? true : value === "false" ? false
      : value === "none" || value === "null" ? null : value;
  }
  return out;
}

function formData(form) {
  const out = {};
  for (const element of form.elements) {
    if (!element.name || element.value === "") continue;
    if (element.name === "variants") out.variants = parseVariants(element.value);
    else out[element.name] = element.type === "number" || element.tagName === "SELECT"
      ? Number(element.value) : element.value;
  }
  return out;
}

function submit(url, form) {
  let data;
  try {
    data = formData(form);
  } catch (err) {
    return showError(err.message);
  }
  stopRun();
  request("POST", url, data);
}

function text(tag, value, cls) {
  const element = document.createElement(tag);
  element.textContent = value;
  if (cls) element.className = cls;
  return element;
}

function render(data) {
  state = data;
  $("board").hidden = false;
  $("table").innerHTML = data.svg;
  const status = $("status");
  const result = $("result");
  const moves = $("moves");
  moves.replaceChildren();
  if (data.kind === "replay") {
    status.textContent = `Replay: round ${data.round}. ${data.move || "The deal."}`
      + (data.caption ? ` ${data.caption}` : "");
    result.hidden = !data.over;
    result.textContent = data.over ? `Game over. Totals: ${data.totals.join(", ")}` : "";
    $("replay-frame").textContent = `frame ${data.frame} of ${data.frames - 1}`;
    const slider = $("replay-slider");
    slider.max = String(data.frames - 1);
    slider.value = String(data.frame);
    for (const id of ["replay-first", "replay-prev", "replay-next", "replay-last", "replay-slider"]) {
      $(id).disabled = false;
    }
    $("log").replaceChildren();
    $("scores").replaceChildren();
    $("last-round").hidden = true;
    return;
  }
  const turn = data.over ? "" : data.your_turn ? " Your turn: click a highlighted tile or a move."
    : ` ${data.names[data.to_act]} to act.`;
  status.textContent = `Round ${data.round}. Boneyard ${data.boneyard}.${turn}`;
  result.hidden = !data.over && !data.failed;
  result.replaceChildren();
  if (data.failed) result.append(text("span", data.failed));
  if (data.over) {
    result.append(text("span", data.result));
    const link = document.createElement("a");
    link.id = "download-record";
    link.textContent = " Download the game record";
    link.download = "chickenfoot-game.json";
    link.href = URL.createObjectURL(new Blob([JSON.stringify(data.record)], { type: "application/json" }));
    const again = text("button", "Replay this game");
    again.type = "button";
    again.id = "replay-this";
    again.addEventListener("click", () => {
      selectTab("replay");
      request("POST", "/api/replay", JSON.stringify(data.record), true);
    });
    result.append(" ", link, " ", again);
    stopRun();
  }
  for (const move of data.moves || []) {
    const button = text("button", move.name, "move");
    button.type = "button";
    button.dataset.action = String(move.action);
    moves.append(button);
  }
  $("log").replaceChildren(...data.log.map((line) => text("li", line)));
  const table = $("scores");
  const rows = [["seat", ...data.rounds.map((_, k) => `R${k + 1}`), "total"]];
  data.names.forEach((name, seat) => {
    rows.push([name, ...data.scores[seat], data.totals[seat]]);
  });
  table.replaceChildren(...rows.map((row, k) => {
    const tr = document.createElement("tr");
    tr.append(...row.map((cell) => text(k ? "td" : "th", String(cell))));
    return tr;
  }));
  const last = $("last-round");
  last.hidden = !data.last_round_svg;
  if (data.last_round_svg) last.querySelector("div").innerHTML = data.last_round_svg;
  if (data.kind === "watch") {
    $("watch-step").disabled = data.over;
    $("watch-run").disabled = data.over;
  }
}

function selectTab(tab) {
  for (const button of document.querySelectorAll("nav .tab")) {
    button.setAttribute("aria-pressed", String(button.dataset.tab === tab));
  }
  for (const form of document.querySelectorAll("#forms form")) {
    form.hidden = form.dataset.tab !== tab;
  }
}

function stopRun() {
  if (runTimer !== null) clearInterval(runTimer);
  runTimer = null;
  $("watch-run").textContent = "Run";
}

async function watchStep() {
  if (!state || state.kind !== "watch" || state.over) return stopRun();
  await request("POST", `/api/games/${state.id}/step`, { version: state.version });
}

function replayTo(frame) {
  if (!state || state.kind !== "replay") return;
  const target = Math.max(0, Math.min(state.frames - 1, frame));
  request("POST", `/api/games/${state.id}/frame`, { frame: target, version: state.version });
}

document.addEventListener("DOMContentLoaded", async () => {
  for (const button of document.querySelectorAll("nav .tab")) {
    button.addEventListener("click", () => selectTab(button.dataset.tab));
  }
  $("play-form").addEventListener("submit", (event) => {
    event.preventDefault();
    submit("/api/play", event.target);
  });
  $("watch-form").addEventListener("submit", (event) => {
    event.preventDefault();
    submit("/api/watch", event.target);
  });
  $("watch-step").addEventListener("click", watchStep);
  $("watch-run").addEventListener("click", () => {
    if (runTimer !== null) return stopRun();
    $("watch-run").textContent = "Pause";
    runTimer = setInterval(() => { if (!busy) watchStep(); }, Number($("watch-speed").value));
  });
  $("replay-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = $("replay-file").files[0];
    if (!file) return showError("choose a game record file first");
    const game = $("replay-game").value;
    request("POST", "/api/replay" + (game ? `?game=${Number(game)}` : ""), await file.text(), true);
  });
  $("replay-first").addEventListener("click", () => replayTo(0));
  $("replay-prev").addEventListener("click", () => replayTo(state.frame - 1));
  $("replay-next").addEventListener("click", () => replayTo(state.frame + 1));
  $("replay-last").addEventListener("click", () => replayTo(state.frames - 1));
  $("replay-slider").addEventListener("change", (event) => replayTo(Number(event.target.value)));
  // A click on anything carrying data-action (a move button, a highlighted hand tile) plays it.
  document.addEventListener("click", (event) => {
    const target = event.target.closest("[data-action]");
    if (!target || !state || state.kind !== "play" || !state.your_turn) return;
    request("POST", `/api/games/${state.id}/move`,
      { action: Number(target.dataset.action), version: state.version });
  });
  try {
    const options = await api("GET", "/api/options");
    $("specs").replaceChildren(...options.specs.map((spec) => {
      const option = document.createElement("option");
      option.value = spec;
      return option;
    }));
    if (options.opponents) document.querySelector("#play-form [name=opponents]").value = options.opponents;
  } catch (err) {
    showError(err.message);
  }
});
