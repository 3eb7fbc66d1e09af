// The page: load what the data scripts registered, check it, start onnxruntime-web and
// sentencepiece, and translate the text box line by line.
//
// Everything arrives through <script> tags (rnmtFile(name, base64 of gzip) calls), never fetch():
// a page opened from the file system may not read files beside it, but it may run scripts.
// onnxruntime-web gets its WebAssembly binary as bytes (env.wasm.wasmBinary) and its
// loader module through a blob: URL, with one thread and no worker, so it needs no server
// either. Any failure (a missing or damaged file, a graph onnxruntime refuses, loading that
// never ends) shows one line "error: ..." and the page stops there.
(function () {
  "use strict";

  const LOAD_TIMEOUT_S = 120;
  const page = JSON.parse(document.getElementById("rnmt-page").textContent);
  const $ = (id) => document.getElementById(id);
  let failed = false;

  function setState(state) { document.body.dataset.state = state; }

  function fail(message) {
    if (failed) return;
    failed = true;
    const line = $("status");
    line.textContent = "error: " + message;
    line.className = "error";
    $("translate").disabled = true;
    setState("error");
  }
  window.rnmtFail = fail; // the data scripts' onerror and the window's error handler use it

  function bytesOf(base64) {
    const text = atob(base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }

  async function gunzip(bytes) { // DecompressionStream: no fetch, so a file:// page may use it
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  async function sha256(bytes) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // The bytes of one registered file, checked against the digest the page expects.
  async function checkedFile(name, expected) {
    const entry = page.files[name];
    if (!(name in window.rnmtFiles)) throw new Error(entry.script + ": did not load (missing or damaged file)");
    let bytes;
    try { bytes = await gunzip(bytesOf(window.rnmtFiles[name])); } catch (e) {
      throw new Error(entry.script + ": not valid gzipped base64 data: the file is damaged");
    }
    const digest = await sha256(bytes);
    if (digest !== expected) {
      throw new Error(entry.script + ": sha256 " + digest.slice(0, 12) + "... differs from the export's " +
                      String(expected).slice(0, 12) + "...: the file is damaged or was changed after export");
    }
    return bytes;
  }

  // Every registered file's bytes, each checked: export files against the export's manifest,
  // the others (onnxruntime's binary, the split tables) against the page's own record.
  async function loadFiles() {
    const early = window.rnmtErrors || [];
    if (early.length) throw new Error(early[0]);
    const manifestBytes = await checkedFile("manifest.json", page.files["manifest.json"].sha256);
    let manifest;
    try { manifest = JSON.parse(new TextDecoder().decode(manifestBytes)); } catch (e) {
      throw new Error(page.files["manifest.json"].script + ": the export's manifest is not valid JSON");
    }
    const listed = manifest.files || {};
    const bytes = {};
    for (const name of Object.keys(page.files)) {
      if (name === "manifest.json") continue;
      bytes[name] = await checkedFile(name, name in listed ? listed[name] : page.files[name].sha256);
    }
    return { manifest: manifest, bytes: bytes };
  }

  function startRuntime(bytes) {
    const ort = window.ort;
    if (!ort || !ort.InferenceSession) throw new Error("onnxruntime-web did not load (" + page.ort_script + " missing or damaged)");
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmBinary = bytes[page.ort_wasm];
    const loader = new Blob([bytes[page.ort_loader]], { type: "text/javascript" });
    ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(loader) };
    return ort;
  }

  async function session(ort, bytes, name) {
    try {
      return await ort.InferenceSession.create(bytes, { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
    } catch (e) {
      throw new Error(page.files[name].script + ": onnxruntime-web cannot load this graph: " + (e.message || e));
    }
  }

  async function load() {
    const started = performance.now();
    const exp = await loadFiles();
    const m = exp.manifest;
    const ort = startRuntime(exp.bytes);
    const sessions = {};
    for (const key of ["encoder", "init", "step"]) sessions[key] = await session(ort, exp.bytes[m.graphs[key]], m.graphs[key]);
    if (typeof window.createSentencePieceModule !== "function") throw new Error("the sentencepiece build did not load");
    const src = await RnmtText.SentencePiece.load(window.createSentencePieceModule, exp.bytes[m.vocab.src]);
    const tgt = m.vocab.tgt === m.vocab.src ? src
      : await RnmtText.SentencePiece.load(window.createSentencePieceModule, exp.bytes[m.vocab.tgt]);
    const model = new RnmtSearch.StepModel(ort, sessions, m);
    const tables = JSON.parse(new TextDecoder().decode(exp.bytes[page.split_tables]));
    const search = page.search_defaults; // the manifest's, read by the exporter's rules
    const translator = new RnmtText.LineTranslator(model, src, tgt, tables, search, m.special_ids);
    return { manifest: m, translator: translator, search: search, seconds: (performance.now() - started) / 1000 };
  }

  function describe(m, search) {
    const langs = m.languages ? m.languages.src + " → " + m.languages.tgt + ", " : "";
    return langs + m.architecture + (m.unit ? " (" + m.unit + ")" : "") + ", " + (m.precision || "fp32") +
      "; beam " + search.beam + ", length penalty " + search.normalize + " alpha " + search.alpha;
  }

  function main() {
    setState("loading");
    const watchdog = setTimeout(() => fail("loading did not finish within " + LOAD_TIMEOUT_S + " s"), LOAD_TIMEOUT_S * 1000);
    load().then((ready) => {
      clearTimeout(watchdog);
      if (failed) return;
      window.rnmtPage = api(ready);
      $("model-info").textContent = describe(ready.manifest, ready.search);
      $("beam").value = ready.search.beam;
      $("status").textContent = "Ready: loaded in " + ready.seconds.toFixed(1) + " s; translates in this page, with no server.";
      $("translate").disabled = false;
      $("translate").addEventListener("click", () => onTranslate(ready));
      setState("ready");
    }, (e) => { clearTimeout(watchdog); fail(e.message || String(e)); });
  }

  function api(ready) {
    return {
      manifest: ready.manifest,
      // Translate lines (one output per line); resolves to {outputs, seconds}.
      async translateLines(lines, beam) {
        const options = optionsOf(ready.search, beam);
        const started = performance.now();
        const outputs = await ready.translator.translateLines(lines, options);
        return { outputs: outputs, seconds: (performance.now() - started) / 1000 };
      },
    };
  }

  function optionsOf(search, beam) {
    const width = Number.isInteger(beam) && beam >= 1 ? beam : search.beam;
    return { beam: width, alpha: search.alpha, normalize: search.normalize };
  }

  async function onTranslate(ready) {
    const lines = $("source").value.split(/\r?\n/);
    while (lines.length > 1 && !lines[lines.length - 1].trim()) lines.pop();
    const beam = parseInt($("beam").value, 10);
    $("translate").disabled = true;
    setState("busy");
    $("status").textContent = "Translating " + lines.length + " line" + (lines.length === 1 ? "" : "s") + "…";
    try {
      const result = await window.rnmtPage.translateLines(lines, beam);
      const output = $("output");
      output.replaceChildren(...result.outputs.map((text) => {
        const p = document.createElement("p");
        p.className = "translation";
        p.textContent = text;
        return p;
      }));
      const n = lines.length, s = result.seconds;
      $("timing").textContent = n + " line" + (n === 1 ? "" : "s") + " in " + s.toFixed(2) + " s: " +
        (1000 * s / n).toFixed(0) + " ms per sentence (" + (n / s).toFixed(1) + " sentences/s), beam " +
        optionsOf(ready.search, beam).beam + ", one thread";
      $("status").textContent = "Done: translated in this page, with no server.";
      setState("done");
    } catch (e) {
      fail("translation failed: " + (e.message || e));
    } finally {
      if (!failed) $("translate").disabled = false;
    }
  }

  main();
})();
