// Text <-> subword ids with the export's sentencepiece models, and the line-level rules of
// `rnmt translate`: a blank line translates to an empty line; a line longer than the
// input limit is cut into pieces (after a sentence end in the second half of the piece,
// else before a word, rnmt.search.limits.split_source), each translated on its own and the
// translations joined with a space.
//
// The sentencepiece build (@sctg/sentencepiece-js, emscripten) exposes no piece strings,
// so which ids start a word or end a sentence comes from a table the exporter wrote with
// rnmt's own rules (split-tables.json).
(function (global) {
  "use strict";

  class SentencePiece {
    static async load(factory, modelBytes) {
      const self = new SentencePiece();
      self.module = await factory();
      const file = "vocab.model";
      self.module.FS.writeFile(file, modelBytes);
      self.processor = new self.module.SentencePieceProcessor();
      self.call((view) => { const status = self.processor.Load(view); status.delete(); }, file);
      self.module.FS.unlink(file);
      if (self.encode("a b").length === 0) throw new Error("not a sentencepiece model");
      return self;
    }

    call(fn, text) { // fn(view of text), freeing the views the build allocates
      const holder = new this.module.StringView(text);
      const view = holder.getView();
      try { return fn(view); } finally { view.delete(); holder.delete(); }
    }

    encode(text) {
      return this.call((view) => {
        const vec = this.processor.EncodeAsIds(view);
        const ids = [];
        for (let i = 0; i < vec.size(); i++) ids.push(vec.get(i));
        vec.delete();
        return ids;
      }, text);
    }

    decode(ids) {
      const vec = this.module.vecFromJSArray(ids);
      try { return this.processor.DecodeIds(vec).slice(); } finally { vec.delete(); }
    }
  }

  // Vocab.decode: stops at the first </s>, drops <pad> and <s>.
  // A batch's size: rnmt_runtime's default source tokens (rnmt_runtime.limits.BATCH_TOKENS),
  // and few enough sentences that a step's [rows, vocabulary] log-probabilities stay small.
  const BATCH_TOKENS = 1000;
  const BATCH_SENTENCES = 64;

  function cleanOutput(ids, special) {
    const kept = [];
    for (const i of ids) {
      if (i === special.eos) break;
      if (i !== special.pad && i !== special.bos) kept.push(i);
    }
    return kept;
  }

  // rnmt.search.limits.split_source: pieces of at most `size` ids.
  function splitSource(ids, size, startsWord, endsSentence) {
    const pieces = [];
    let start = 0;
    const n = ids.length;
    while (n - start > size) {
      const end = start + size;
      let cut = null;
      for (let c = end; c > start + Math.floor(size / 2); c--) {
        if (startsWord(ids[c]) && endsSentence(ids[c - 1])) { cut = c; break; }
      }
      if (cut === null) {
        cut = end;
        for (let c = end; c > start; c--) if (startsWord(ids[c])) { cut = c; break; }
      }
      pieces.push(ids.slice(start, cut));
      start = cut;
    }
    pieces.push(ids.slice(start));
    return pieces;
  }

  // rnmt.search.limits.default_input_limit
  function defaultInputLimit(ratio, offset, cap) {
    const MIN_PIECE = 16;
    if (ratio <= 0) return Math.max(MIN_PIECE, cap);
    return Math.max(MIN_PIECE, Math.trunc((cap - offset) / ratio));
  }

  // A set of ids from a run-length list [[first, count], ...] (the table's compact form).
  function idSet(runs) {
    const set = new Set();
    for (const [first, count] of runs) for (let i = 0; i < count; i++) set.add(first + i);
    return set;
  }

  class LineTranslator {
    // src/tgt: SentencePiece; tables: {word_starts, sentence_ends} run lists over source ids
    constructor(model, src, tgt, tables, search, special) {
      this.model = model; this.src = src; this.tgt = tgt; this.special = special;
      this.search = search;
      this.wordStarts = idSet(tables.word_starts);
      this.sentenceEnds = idSet(tables.sentence_ends);
    }

    // Translations of `lines` (one per line; "" for a blank one), as rnmt translate makes
    // them: every line's pieces (a long line is cut) sorted by length into batches of at most
    // BATCH_TOKENS padded source subwords and BATCH_SENTENCES sentences, searched batch by
    // batch, and each line's pieces' translations joined with a space.
    async translateLines(lines, options) {
      const s = this.search;
      const maxInput = s.max_input_tokens || defaultInputLimit(s.max_len_ratio, s.max_len_offset, s.max_output_tokens);
      const pieces = []; // {line, src}: src with </s>
      lines.forEach((line, i) => {
        if (!line.trim()) return;
        const ids = this.src.encode(line);
        const parts = ids.length + 1 <= maxInput ? [ids]
          : splitSource(ids, Math.max(maxInput - 1, 1), (t) => this.wordStarts.has(t), (t) => this.sentenceEnds.has(t));
        for (const part of parts) pieces.push({ line: i, src: part.concat([this.special.eos]), text: "" });
      });
      const order = pieces.map((_, k) => k).sort((a, b) => pieces[b].src.length - pieces[a].src.length || a - b);
      for (let start = 0; start < order.length;) {
        let end = start + 1;
        const width = pieces[order[start]].src.length; // the longest of the batch comes first
        while (end < order.length && end - start < BATCH_SENTENCES && width * (end - start + 1) <= BATCH_TOKENS) end++;
        await this.translateBatch(order.slice(start, end).map((k) => pieces[k]), options);
        start = end;
      }
      const texts = lines.map(() => []);
      for (const piece of pieces) if (piece.text) texts[piece.line].push(piece.text);
      return texts.map((parts) => parts.join(" "));
    }

    async translateLine(line, options) {
      return (await this.translateLines([line], options))[0];
    }

    async translateBatch(batch, options) {
      const s = this.search;
      const sources = batch.map((p) => p.src);
      const maxLens = sources.map((src) => RnmtSearch.outputLimit(src.length, s.max_len_ratio, s.max_len_offset,
                                                                    s.max_output_tokens));
      const K = options.beam;
      const best = K <= 1 ? await RnmtSearch.greedy(this.model, sources, maxLens)
        : (await RnmtSearch.beam(this.model, sources, maxLens, K, options.alpha, options.normalize)).map((f) => f[0]);
      batch.forEach((piece, b) => {
        piece.text = best[b] ? this.tgt.decode(cleanOutput(best[b].tokens, this.special)) : "";
      });
    }
  }

  global.RnmtText = { SentencePiece, LineTranslator, splitSource, defaultInputLimit, cleanOutput };
})(typeof window !== "undefined" ? window : globalThis);
