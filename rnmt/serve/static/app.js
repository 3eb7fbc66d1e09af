// The rnmt demo page: no build step, no external resources.
"use strict";

const $ = (id) => document.getElementById(id);

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

// The API key (for a server started with --api-key) lives in sessionStorage: this tab only,
// dropped when it closes, never sent anywhere but this server.
const KEY_STORAGE = "rnmt-api-key";

function apiKey() {
  return $("api-key").value.trim();
}

function rememberKey() {
  if (apiKey()) sessionStorage.setItem(KEY_STORAGE, apiKey());
  else sessionStorage.removeItem(KEY_STORAGE);
}

// fetch() with the key as a bearer token; resolves to the JSON body, or throws an Error
// whose message is the server's one-line error (or, on 401, what to do about the key).
async function api(path, options) {
  const init = { ...options, headers: { ...(options && options.headers) } };
  if (apiKey()) init.headers.Authorization = `Bearer ${apiKey()}`;
  const res = await fetch(path, init);
  const data = await res.json().catch(() => null);
  if (res.status === 401) {
    throw new Error(apiKey()
      ? "the server refused this API key (401): check the key in the API key field"
      : "this server needs an API key (401): enter it in the API key field");
  }
  if (!res.ok) throw new Error((data && data.error) || `HTTP ${res.status}`);
  return data;
}

async function loadModel() {
  const box = $("model-info");
  try {
    const info = await api("/model");
    box.className = "muted";
    const params = (info.parameters.total / 1e6).toFixed(2);
    $("model-info").textContent =
      `${info.name}: ${info.arch} (${info.cell}), ${info.source_language} \u2192 ${info.target_language}, ` +
      `${params}M parameters, vocabularies ${info.src_vocab_size}/${info.tgt_vocab_size}` +
      (info.dev_bleu !== null && info.dev_bleu !== undefined ? `, dev BLEU ${info.dev_bleu.toFixed(1)}` : "");
    $("languages").textContent = `(${info.source_language} \u2192 ${info.target_language})`;
    buildOptions(info.options || []);
    document.body.dataset.model = info.name;
  } catch (err) {
    box.className = "error";
    box.textContent = `could not read the model information: ${err.message}`;
  }
}

// The search options come from GET /model (rnmt/search/options.py): one control per
// option, with the server's bounds and this model's default; nothing is hard-coded here.
let OPTIONS = [];
const SET_BY_PAGE = new Set(["return_alignment"]);  // the page always asks for the heatmap

function controlId(name) {
  return name.replaceAll("_", "-");
}

function buildOptions(options) {
  const box = $("search-options");
  clear(box);
  OPTIONS = options.filter((o) => !SET_BY_PAGE.has(o.name));
  for (const o of OPTIONS) {
    const label = el("label", `${o.name.replaceAll("_", " ")} `, { title: o.help });
    let input;
    if (o.type === "choice") {
      input = el("select");
      for (const c of o.choices) input.appendChild(el("option", c, { value: c }));
    } else if (o.type === "boolean") {
      input = el("input", null, { type: "checkbox" });
      input.checked = Boolean(o.default);
    } else {
      input = el("input", null, { type: "number", step: o.type === "integer" ? "1" : "any" });
      if (o.minimum !== null) input.min = o.minimum;
      if (o.maximum !== null) input.max = o.maximum;
    }
    if (o.type !== "boolean" && o.default !== null && o.default !== undefined) input.value = o.default;
    input.id = controlId(o.name);
    label.appendChild(input);
    box.appendChild(label);
  }
}

// The request's search options: each control's value, left out when empty or not a number.
function optionValues() {
  const values = {};
  for (const o of OPTIONS) {
    const input = $(controlId(o.name));
    if (o.type === "boolean") {
      values[o.name] = input.checked;
    } else if (o.type === "choice") {
      if (input.value) values[o.name] = input.value;
    } else {
      const v = o.type === "integer" ? parseInt(input.value, 10) : parseFloat(input.value);
      if (Number.isFinite(v)) values[o.name] = v;
    }
  }
  return values;
}

function drawHeatmap(alignment) {
  const box = $("heatmap");
  clear(box);
  $("hover-info").textContent = "Hover over a cell to see its source and target tokens.";
  if (!alignment || alignment.tgt_tokens.length === 0) {
    box.appendChild(el("p", "No attention: the last sentence is empty.", { class: "muted" }));
    return;
  }
  const { src_tokens: src, tgt_tokens: tgt, attention } = alignment;
  const table = el("table", null, { id: "attention", "aria-label": "attention heatmap" });
  const head = el("thead");
  const headRow = el("tr");
  headRow.appendChild(el("th"));
  src.forEach((tok, j) => {
    const th = el("th", null, { "data-col": j });
    th.appendChild(el("span", tok));
    headRow.appendChild(th);
  });
  head.appendChild(headRow);
  table.appendChild(head);
  const body = el("tbody");
  const info = $("hover-info");
  tgt.forEach((tgtTok, i) => {
    const row = el("tr");
    row.appendChild(el("th", tgtTok, { "data-row": i }));
    src.forEach((srcTok, j) => {
      const w = attention[i][j];
      const cell = el("td", null, {
        "data-src": srcTok, "data-tgt": tgtTok, "data-weight": w.toFixed(4),
        title: `${srcTok} \u2192 ${tgtTok}: ${w.toFixed(3)}`,
      });
      // square-root scale: small weights stay visible, 1 is the darkest
      const shade = Math.round(255 * (1 - Math.sqrt(Math.min(1, Math.max(0, w)))));
      cell.style.background = `rgb(${shade}, ${shade}, 255)`;
      cell.addEventListener("mouseenter", () => {
        info.textContent = `source: ${srcTok} \u00b7 target: ${tgtTok} \u00b7 weight ${w.toFixed(3)}`;
        table.querySelectorAll(".hl").forEach((n) => n.classList.remove("hl"));
        table.querySelector(`th[data-col="${j}"]`).classList.add("hl");
        table.querySelector(`th[data-row="${i}"]`).classList.add("hl");
      });
      row.appendChild(cell);
    });
    body.appendChild(row);
  });
  table.appendChild(body);
  box.appendChild(table);
  box.appendChild(el("p", "Rows: target tokens; columns: source tokens; darker = more attention (square-root scale).",
                     { class: "muted", id: "heatmap-scale" }));
}

async function translate() {
  const button = $("translate");
  const status = $("status");
  const output = $("output");
  const texts = $("source").value.split("\n");
  while (texts.length > 1 && texts[texts.length - 1].trim() === "") texts.pop();
  button.disabled = true;
  status.className = "muted";
  status.textContent = "translating\u2026";
  document.body.dataset.state = "busy";
  try {
    const data = await api("/translate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ texts, ...optionValues(), return_alignment: true }),
    });
    clear(output);
    for (const t of data.translations) output.appendChild(el("p", t.text, { class: "translation" }));
    let last = null;
    for (const t of data.translations) if (t.source.trim() !== "") last = t;
    drawHeatmap(last ? last.alignment : null);
    status.textContent = `${data.translations.length} segment(s) in ${data.elapsed_ms.toFixed(0)} ms`;
    document.body.dataset.state = "done";
  } catch (err) {
    clear(output);
    output.appendChild(el("p", `error: ${err.message}`, { class: "error" }));
    status.className = "error";
    status.textContent = "failed";
    document.body.dataset.state = "error";
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("api-key").value = sessionStorage.getItem(KEY_STORAGE) || "";
  $("api-key").addEventListener("change", () => {  // on Enter or leaving the field
    rememberKey();
    if (document.body.dataset.model === undefined) loadModel();
  });
  loadModel();
  $("translate").addEventListener("click", translate);
  $("source").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) translate();
  });
});
