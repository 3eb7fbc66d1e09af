// Greedy and beam search over an exported model's step graph, one sentence at a time.
//
// The same rules as rnmt's PyTorch search (rnmt/search/beam.py) and the Python runtime, so
// the page's outputs equal theirs: <pad> and <s> are never produced; at the output cap only
// </s> may follow (it keeps its own log-probability); a beam step ranks the 2K best one-word
// extensions, a hypothesis ending in </s> is finished when it ranks among the K best, the K
// best that did not end go on; the sentence is done once K hypotheses finished or none can
// go on; a finished hypothesis scores logP / lp(|Y|) with GNMT's lp = ((5 + |Y|) / 6)^alpha
// ("gnmt"), |Y| ("length") or 1 ("none"), |Y| counting </s>. Running sums are kept in
// float32 (Math.fround) as the PyTorch search keeps them, so ties and near-ties break alike.
//
// A model is three onnxruntime-web sessions (encoder, init, step; EXPORT_CONTRACT: inputs
// src/src_mask, memory.*, state.*, prev_tokens; outputs memory.*, state.*, log_probs,
// next_state.*). Each session is fed only the inputs it declares.
(function (global) {
  "use strict";

  const f32 = Math.fround;

  function lengthPenalty(length, alpha, normalize) {
    if (normalize === "gnmt") return Math.pow((5.0 + length) / 6.0, alpha);
    if (normalize === "length") return length;
    if (normalize === "none") return 1.0;
    throw new Error("unknown length normalisation '" + normalize + "'");
  }

  // The longest output (subwords, </s> included) of a source of srcLen subwords (</s>
  // included): floor(srcLen * ratio) + offset, at most cap, at least 1 (rnmt.search.limits).
  function outputLimit(srcLen, ratio, offset, cap) {
    const scaled = Math.min(f32(f32(srcLen) * f32(ratio)), cap);
    return Math.max(1, Math.min(Math.trunc(scaled) + Math.min(offset, cap), cap));
  }

  // Rows `rows` of a tensor (first dimension), as a new tensor of the same type.
  function takeRows(ort, tensor, rows) {
    const dims = tensor.dims.slice();
    const width = dims.slice(1).reduce((a, b) => a * b, 1);
    const src = tensor.data;
    const out = new src.constructor(rows.length * width);
    for (let i = 0; i < rows.length; i++) {
      out.set(src.subarray(rows[i] * width, (rows[i] + 1) * width), i * width);
    }
    dims[0] = rows.length;
    return new ort.Tensor(tensor.type, out, dims);
  }

  function repeatEach(n, times) { // [0,0,..,1,1,..]: row i -> rows i*times..
    const rows = [];
    for (let i = 0; i < n; i++) for (let k = 0; k < times; k++) rows.push(i);
    return rows;
  }

  function feedsFor(session, named) {
    const feeds = {};
    for (const name of session.inputNames) {
      if (!(name in named)) throw new Error("the graph wants an input '" + name + "' the model does not make");
      feeds[name] = named[name];
    }
    return feeds;
  }

  class StepModel {
    // sessions: {encoder, init, step}; manifest: the export's manifest (memory, state, special_ids, ...)
    constructor(ort, sessions, manifest) {
      this.ort = ort;
      this.sessions = sessions;
      this.memoryNames = manifest.memory;
      this.stateNames = manifest.state;
      this.sharesMemory = !!manifest.beam_shares_memory;
      const ids = manifest.special_ids;
      this.pad = ids.pad; this.bos = ids.bos; this.eos = ids.eos;
    }

    async encode(ids) { // ids: source subwords, </s> included
      const n = ids.length;
      const src = new this.ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, n]);
      const mask = new this.ort.Tensor("bool", new Uint8Array(n).fill(1), [1, n]);
      const out = await this.sessions.encoder.run(feedsFor(this.sessions.encoder, { src: src, src_mask: mask }));
      const memory = {};
      for (const name of this.memoryNames) memory["memory." + name] = out["memory." + name];
      return memory;
    }

    async initState(memory) {
      const out = await this.sessions.init.run(feedsFor(this.sessions.init, memory));
      const state = {};
      for (const name of this.stateNames) state["state." + name] = out["state." + name];
      return state;
    }

    // One decoder step for the rows of `prev`; returns {logProbs: Float32Array [N*V], V, state}.
    async step(prev, state, memory) {
      const tokens = new this.ort.Tensor("int64", BigInt64Array.from(prev, BigInt), [prev.length]);
      const named = Object.assign({ prev_tokens: tokens }, state, memory);
      const out = await this.sessions.step.run(feedsFor(this.sessions.step, named));
      const next = {};
      for (const name of this.stateNames) next["state." + name] = out["next_state." + name];
      const lp = out.log_probs;
      return { logProbs: lp.data, V: lp.dims[lp.dims.length - 1], state: next };
    }

    select(tree, rows) {
      const out = {};
      for (const key of Object.keys(tree)) out[key] = takeRows(this.ort, tree[key], rows);
      return out;
    }

    maskSpecials(logProbs, rowsCount, V) {
      for (let r = 0; r < rowsCount; r++) {
        logProbs[r * V + this.pad] = -Infinity;
        logProbs[r * V + this.bos] = -Infinity;
      }
    }

    forceEos(logProbs, row, V) { // at the length limit only </s> may follow
      const eos = logProbs[row * V + this.eos];
      logProbs.fill(-Infinity, row * V, (row + 1) * V);
      logProbs[row * V + this.eos] = eos;
    }
  }

  // Greedy search: {tokens (no </s>), score, logprob}.
  async function greedy(model, srcIds, maxLen) {
    const memory = await model.encode(srcIds);
    let state = await model.initState(memory);
    let prev = [model.bos];
    const tokens = [];
    let logprob = f32(0);
    for (let t = 0; t < maxLen; t++) {
      const out = await model.step(prev, state, memory);
      const lp = out.logProbs, V = out.V;
      model.maskSpecials(lp, 1, V);
      if (t + 1 >= maxLen) model.forceEos(lp, 0, V);
      let best = 0;
      for (let w = 1; w < V; w++) if (lp[w] > lp[best]) best = w;
      logprob = f32(logprob + lp[best]);
      state = out.state;
      if (best === model.eos) break;
      tokens.push(best);
      prev = [best];
    }
    return { tokens: tokens, score: logprob, logprob: logprob };
  }

  // The k best candidates (score, row, token) of rows' scores + log-probabilities, best
  // first; among equal scores the lower flat index (row * V + token) first.
  function bestExtensions(scores, logProbs, V, k) {
    const top = []; // sorted, best first: [score, flat]
    for (let r = 0; r < scores.length; r++) {
      const base = scores[r];
      if (base === -Infinity && top.length >= k) continue;
      for (let w = 0; w < V; w++) {
        const s = f32(base + logProbs[r * V + w]);
        if (top.length >= k && !(s > top[top.length - 1][0])) continue;
        let i = top.length < k ? top.length : k - 1;
        if (top.length < k) top.push(null);
        while (i > 0 && s > top[i - 1][0]) { top[i] = top[i - 1]; i--; }
        top[i] = [s, r * V + w];
      }
    }
    return top.map(([s, flat]) => ({ score: s, row: Math.floor(flat / V), token: flat % V }));
  }

  // Beam search of width K: the finished hypotheses, best first ({tokens, score, logprob}).
  async function beam(model, srcIds, maxLen, K, alpha, normalize) {
    let memory = await model.encode(srcIds);
    let state = model.select(await model.initState(memory), repeatEach(1, K));
    if (!model.sharesMemory) memory = model.select(memory, repeatEach(1, K));
    let scores = new Array(K).fill(-Infinity);
    scores[0] = 0; // all beams start identical: only the first may expand
    let history = Array.from({ length: K }, () => []);
    let prev = new Array(K).fill(model.bos);
    const finished = [];
    let count = 0;
    for (let t = 0; ; t++) {
      const out = await model.step(prev, state, memory);
      const lp = out.logProbs, V = out.V;
      model.maskSpecials(lp, K, V);
      if (t + 1 >= maxLen) for (let r = 0; r < K; r++) model.forceEos(lp, r, V);
      const cands = bestExtensions(scores, lp, V, Math.min(2 * K, K * V));
      const alive = [];
      cands.forEach((c, rank) => {
        if (c.token === model.eos) {
          if (rank < K && c.score !== -Infinity) {
            count++;
            finished.push({ tokens: history[c.row].slice(), logprob: c.score,
                            score: c.score / lengthPenalty(t + 1, alpha, normalize) });
          }
        } else if (alive.length < K) {
          alive.push(c);
        }
      });
      // fewer than K that did not end: the rest are dead rows (-inf) taken from the ended
      for (const c of cands) {
        if (alive.length >= K) break;
        if (c.token === model.eos) alive.push({ score: -Infinity, row: c.row, token: c.token });
      }
      const done = count >= K || !(alive[0].score > -Infinity);
      if (done) break;
      const rows = alive.map((c) => c.row);
      history = alive.map((c) => history[c.row].concat([c.token]));
      state = model.select(out.state, rows);
      scores = alive.map((c) => c.score);
      prev = alive.map((c) => c.token);
    }
    return finished.sort((a, b) => b.score - a.score); // stable: earlier first among equals
  }

  global.RnmtSearch = { StepModel, greedy, beam, lengthPenalty, outputLimit, bestExtensions };
})(typeof window !== "undefined" ? window : globalThis);
