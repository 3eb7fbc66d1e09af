"""The dl4mt RNNSearch learns to reverse sequences in a few hundred updates."""

import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model
from rnmt.search import greedy_search
from rnmt.training.loss import label_smoothed_nll


def test_tiny_model_learns_to_reverse_sequences():
    """Reverse strings of 2-6 symbols: >= 95% exact match after a short training."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    V, n_sym = 12, 8  # ids 4..11 are symbols
    model = build_model(ModelConfig(emb_size=24, hidden_size=48, src_vocab_size=V, tgt_vocab_size=V))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def batch(n):
        lengths = torch.randint(2, 7, (n,))
        S = int(lengths.max()) + 1
        src = torch.zeros(n, S, dtype=torch.long)
        tgt_out = torch.zeros(n, S, dtype=torch.long)
        for i, L in enumerate(lengths.tolist()):
            seq = torch.randint(4, 4 + n_sym, (L,))
            src[i, :L], src[i, L] = seq, 3
            tgt_out[i, :L], tgt_out[i, L] = seq.flip(0), 3
        tgt_in = torch.cat([torch.full((n, 1), 2), tgt_out[:, :-1]], 1)
        tgt_in[tgt_in == 3] = 0
        return src, tgt_in, tgt_out

    model.train()
    for _ in range(400):
        src, tgt_in, tgt_out = batch(64)
        loss, _ = label_smoothed_nll(model(src, src != 0, tgt_in), tgt_out, tgt_out != 0, 0.0)
        opt.zero_grad()
        (loss / (tgt_out != 0).sum()).backward()
        opt.step()
    model.eval()
    src, _, tgt_out = batch(200)
    hyps = greedy_search(model, src, src != 0, torch.full((200,), 10))
    refs = [[t for t in row if t not in (0, 3)] for row in tgt_out.tolist()]
    accuracy = sum(h.tokens == r for h, r in zip(hyps, refs)) / len(refs)
    assert accuracy >= 0.95
