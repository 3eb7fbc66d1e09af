// Greedy and beam search over an exported model's step graph, over a batch of sentences.
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

    // sources: each a list of source subwords, </s> included; padded into one [B, S] batch
    async encode(sources) {
      const B = sources.length, S = Math.max(...sources.map((ids) => ids.length));
      const ids = new BigInt64Array(B * S).fill(BigInt(this.pad));
      const mask = new Uint8Array(B * S);
      sources.forEach((row, b) => row.forEach((id, j) => { ids[b * S + j] = BigInt(id); mask[b * S + j] = 1; }));
      const src = new this.ort.Tensor("int64", ids, [B, S]);
      const srcMask = new this.ort.Tensor("bool", mask, [B, S]);
      const out = await this.sessions.encoder.run(feedsFor(this.sessions.encoder, { src: src, src_mask: srcMask }));
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

  // Greedy search of a batch (sources: subword lists with </s>; maxLens: each one's output
  // cap): per sentence {tokens (no </s>), score, logprob}. A sentence leaves the batch when
  // it ends; the others go on (each row's arithmetic is its own).
  async function greedy(model, sources, maxLens) {
    let memory = await model.encode(sources);
    let state = await model.initState(memory);
    let live = sources.map((_, b) => b);
    let prev = live.map(() => model.bos);
    const tokens = live.map(() => []);
    const logprob = live.map(() => f32(0));
    const results = new Array(sources.length);
    const longest = Math.max(...maxLens);
    for (let t = 0; live.length > 0; t++) {
      if (t >= longest) throw new Error(`greedy search passed the longest length limit (${longest})`);
      const out = await model.step(prev, state, memory);
      const lp = out.logProbs, V = out.V;
      model.maskSpecials(lp, live.length, V);
      const keep = [];
      live.forEach((b, i) => {
        if (t + 1 >= maxLens[b]) model.forceEos(lp, i, V);
        let best = 0;
        for (let w = 1; w < V; w++) if (lp[i * V + w] > lp[i * V + best]) best = w;
        logprob[b] = f32(logprob[b] + lp[i * V + best]);
        if (best === model.eos) {
          results[b] = { tokens: tokens[b], score: logprob[b], logprob: logprob[b] };
        } else {
          tokens[b].push(best);
          keep.push(i);
        }
      });
      if (keep.length < live.length) memory = model.select(memory, keep);
      state = model.select(out.state, keep);
      prev = keep.map((i) => tokens[live[i]][tokens[live[i]].length - 1]);
      live = keep.map((i) => live[i]);
    }
    return results;
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

  // One sentence's step of a beam search: from its K rows' candidates, the hypotheses that
  // finish (into `finished`) and the K that go on ([{score, row, token}], row within the K).
  function advance(cands, K, t, alpha, normalize, eos, history, finished) {
    const alive = [];
    let ended = 0;
    cands.forEach((c, rank) => {
      if (c.token === eos) {
        if (rank < K && c.score !== -Infinity) {
          ended++;
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
      if (c.token === eos) alive.push({ score: -Infinity, row: c.row, token: c.token });
    }
    return { alive: alive, ended: ended };
  }

  // Beam search of width K over a batch (sources: subword lists with </s>; maxLens: each
  // one's output cap): per sentence its finished hypotheses, best first ({tokens, score,
  // logprob}). Rows b*K..b*K+K-1 are sentence b's; a sentence leaves the batch once K
  // hypotheses finished or none can go on.
  async function beam(model, sources, maxLens, K, alpha, normalize) {
    const B = sources.length;
    let memory = await model.encode(sources);
    let state = model.select(await model.initState(memory), repeatEach(B, K));
    if (!model.sharesMemory) memory = model.select(memory, repeatEach(B, K));
    let live = sources.map((_, b) => b);
    let scores = live.map(() => { const s = new Array(K).fill(-Infinity); s[0] = 0; return s; });
    let history = Array.from({ length: B * K }, () => []);
    let prev = new Array(B * K).fill(model.bos);
    const finished = sources.map(() => []);
    const count = new Array(B).fill(0);
    const longest = Math.max(...maxLens);
    for (let t = 0; live.length > 0; t++) {
      // every row must end at its limit: going past it is a bug, never a long input
      if (t >= longest) throw new Error(`beam search passed the longest length limit (${longest})`);
      const out = await model.step(prev, state, memory);
      const lp = out.logProbs, V = out.V;
      model.maskSpecials(lp, live.length * K, V);
      const keep = [], rows = [], nextScores = [], nextHistory = [], nextPrev = [];
      live.forEach((b, i) => {
        if (t + 1 >= maxLens[b]) for (let r = 0; r < K; r++) model.forceEos(lp, i * K + r, V);
        const cands = bestExtensions(scores[i], lp.subarray(i * K * V, (i + 1) * K * V), V, Math.min(2 * K, K * V));
        const mine = history.slice(i * K, (i + 1) * K);
        const step = advance(cands, K, t, alpha, normalize, model.eos, mine, finished[b]);
        count[b] += step.ended;
        if (count[b] >= K || !(step.alive[0].score > -Infinity)) return; // done
        keep.push(i);
        for (const c of step.alive) {
          rows.push(i * K + c.row);
          nextHistory.push(mine[c.row].concat([c.token]));
          nextPrev.push(c.token);
        }
        nextScores.push(step.alive.map((c) => c.score));
      });
      if (keep.length < live.length) { // the done sentences leave: their memory with them
        memory = model.select(memory, model.sharesMemory ? keep
          : keep.flatMap((i) => Array.from({ length: K }, (_, r) => i * K + r)));
      }
      state = model.select(out.state, rows);
      live = keep.map((i) => live[i]);
      scores = nextScores;
      history = nextHistory;
      prev = nextPrev;
    }
    return finished.map((f) => f.sort((a, b) => b.score - a.score)); // stable: earlier first among equals
  }

  global.RnmtSearch = { StepModel, greedy, beam, lengthPenalty, outputLimit, bestExtensions };
})(typeof window !== "undefined" ? window : globalThis);
