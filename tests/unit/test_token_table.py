"""Decoding's per-vocabulary table of previous-word products (rnmt.modules.token_table)."""

import torch

from rnmt.config import ModelConfig
from rnmt.models import build_model


def tiny(**options):
    torch.manual_seed(0)
    model = build_model(ModelConfig(emb_size=8, hidden_size=12, src_vocab_size=20, tgt_vocab_size=25, **options))
    return model.eval()


def one_step(model, prev, grad: bool):
    src = torch.tensor([[5, 6, 7, 3], [4, 9, 3, 0]])
    mask = src != 0
    with torch.set_grad_enabled(grad):
        memory = model.encode(src, mask)
        log_probs, state, _ = model.step(prev, model.init_state(memory), memory)
    return log_probs.detach(), state["s"].detach()


def test_table_lookup_equals_the_products():
    for options in ({}, {"layer_norm": True}, {"cell": "atr"}):
        model = tiny(**options)
        prev = torch.tensor([2, 17])
        table, products = one_step(model, prev, grad=False), one_step(model, prev, grad=True)
        assert model._token_table.table is not None  # the no-grad step used the table
        for a, b in zip(table, products):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_table_follows_parameter_updates():
    model = tiny()
    prev = torch.tensor([2, 17])
    before = one_step(model, prev, grad=False)[0]
    with torch.no_grad():  # what an optimizer step does: in place
        model.unit1.weight_x.add_(0.5)
        model.readout_prev.bias.sub_(0.3)
    after_table = one_step(model, prev, grad=False)[0]
    after_products = one_step(model, prev, grad=True)[0]
    assert not torch.allclose(before, after_table, atol=1e-3)
    torch.testing.assert_close(after_table, after_products, atol=1e-5, rtol=1e-5)


def test_no_table_in_training_mode():
    model = tiny().train()
    with torch.no_grad():
        model.step(torch.tensor([2]), {"s": torch.zeros(1, 12)},
                   model.encode(torch.tensor([[5, 3]]), torch.tensor([[True, True]])))
    assert model._token_table.table is None


def test_a_fused_optimizer_step_is_invisible_to_the_key_until_forget_tables():
    """PyTorch's fused Adam changes the weights without bumping their version counters, so
    the table's key cannot see it: validation decoded with the first validation's table."""
    from rnmt.modules.token_table import forget_tables

    model = tiny()
    prev = torch.tensor([2, 17])
    one_step(model, prev, grad=False)  # builds the table
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5, fused=True)
    model.train()
    one_step(model, prev, grad=True)
    src = torch.tensor([[5, 6, 3], [4, 9, 3]])
    memory = model.encode(src, src != 0)
    log_probs, _, _ = model.step(prev, model.init_state(memory), memory)
    log_probs.sum().backward()
    versions = [p._version for p in model.parameters()]
    optimizer.step()
    model.eval()
    assert [p._version for p in model.parameters()] == versions  # what the key misses
    stale = one_step(model, prev, grad=False)[0]
    products = one_step(model, prev, grad=True)[0]
    assert not torch.allclose(stale, products, atol=1e-3)
    forget_tables(model)
    torch.testing.assert_close(one_step(model, prev, grad=False)[0], products, atol=1e-5, rtol=1e-5)


def test_lookups_from_several_threads_at_once_never_see_a_half_built_table():
    """Threads that find the table missing at the same moment (the first requests of a
    server, a user's own threads) each get correct rows, with threads switching every
    microsecond. (The earlier code kept the key and the table in two attributes and read the
    table again after assigning it, so a thread could read None that another had just set
    before building; that window is a few instructions wide and this stress does not hit it
    reliably: the fix holds by construction, one attribute read once per lookup.)"""
    import sys
    import threading

    from rnmt.modules.token_table import TokenTable

    table = TokenTable()
    weight = torch.arange(40.0).reshape(10, 4)
    tokens = torch.tensor([3, 1, 7])
    expected = weight.index_select(0, tokens)
    errors, results = [], []

    def work():
        try:
            for k in range(300):
                if k % 3 == 0:
                    table.clear()  # as forget_tables does between updates
                results.append(table.lookup(tokens, [weight], weight.clone))
        except Exception as exc:  # noqa: BLE001 - the test reports whatever a thread raised
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(results) == 2400 and all(torch.equal(r, expected) for r in results)
