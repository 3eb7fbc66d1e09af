"""int8 decoding: the products of a model that only translates, in dynamic int8.

`quantize_for_decoding(model)` turns a loaded model's matrix products into int8 ones on the
CPU: every ``nn.Linear`` with more than one output (readouts, the output layer, attention
projections, initial-state layers) and every recurrent unit's input and recurrent matrices
(``weight_x``, ``weight_h``). Weights are quantised once, per output channel; activations
are quantised at each call with their own range (dynamic quantisation), and results come
back in fp32, so everything else (gates, layer norms, softmax, the search) is unchanged.
Attention score vectors (one output) and embeddings stay fp32.

Whose int8 kernels (`engine`): fbgemm's (PyTorch's default, VNNI dot products where the CPU
has them), or oneDNN's, which run on AMX's int8 tiles: on a 2-core Xeon with AMX the
quickstart model decoded 1.73-1.84x fp32's speed with oneDNN's against 1.39-1.58x with
fbgemm's (three runs; oneDNN's faster in 15 of 18 paired rounds), at fp32's BLEU
(docs/performance.md, "int8 decoding"). The automatic choice takes oneDNN's where
/proc/cpuinfo lists ``amx_int8`` and fbgemm's elsewhere (`rnmt.hardware.int8_engine`);
``runtime.int8_kernels: fbgemm`` or ``onednn`` forces one, through the execution plan
(`set_engine`). The choice is made when the weights are packed (PyTorch's packed weights
carry their library), so it holds for the model's life.

The units read their packed twins through `Cell.recurrent_product` / `Cell.input_product`
(``int8_h`` / ``int8_x``, None unless quantised); a quantised model is for decoding only.
PyTorch 2.13 marks its quantised-tensor API as deprecated; this module is the one place
that uses it.
"""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable, Iterator, Optional

import torch
from torch import Tensor, nn

from rnmt import hardware, products
from rnmt.errors import UserError

# PyTorch's name for each library's int8 kernels (torch.backends.quantized.engine).
ENGINES = {"fbgemm": "x86", "onednn": "onednn"}
_engine_lock = threading.Lock()  # the engine setting is process-wide: one packing at a time
_chosen: Optional[str] = None  # the execution plan's int8_kernels (`set_engine`); None: the CPU rule


def cpu_flags() -> Optional[str]:
    """This CPU's flags as one string (`rnmt.hardware`), or None where /proc/cpuinfo gives none."""
    return hardware.cpu_flags_line()


def engine_for(flags: Optional[str], requested: str = "auto") -> str:
    """Whose int8 kernels to pack for: ``requested`` (fbgemm, onednn or auto, as in
    ``runtime.int8_kernels``), where auto is oneDNN's on a CPU whose flags list ``amx_int8`` (AMX
    int8 tiles, which fbgemm does not use) and fbgemm's elsewhere."""
    choice = requested.strip().lower() or "auto"
    if choice == "auto":
        return "onednn" if flags is not None and "amx_int8" in flags.split() else "fbgemm"
    if choice not in ENGINES:
        raise UserError(f"int8 kernels must be fbgemm, onednn or auto, got {requested!r}")
    return choice


def set_engine(name: Optional[str]) -> None:
    """The process's int8 kernels from now on (the execution plan's ``int8_kernels``: fbgemm
    or onednn); None: back to the CPU rule. Models packed before keep theirs."""
    global _chosen
    _chosen = None if name is None else engine_for(None, name)


def engine() -> str:
    """This process's int8 kernels (the plan's choice, else `engine_for` this CPU); fbgemm's
    where this PyTorch build lacks the chosen one."""
    chosen = _chosen or engine_for(cpu_flags(), "auto")
    return chosen if ENGINES[chosen] in torch.backends.quantized.supported_engines else "fbgemm"


@contextmanager
def _packing_for(name: str) -> Iterator[None]:
    """PyTorch packs int8 weights for its current quantised engine: set it for a block."""
    with _engine_lock:
        before = torch.backends.quantized.engine
        torch.backends.quantized.engine = ENGINES[name]
        try:
            yield
        finally:
            torch.backends.quantized.engine = before


def pack(weight: Tensor, kernels: Optional[str] = None) -> Any:
    """Packed int8 twin of ``weight`` [in, out] (a unit's layout, x @ weight), quantised per
    output channel with a symmetric range, for ``kernels`` (fbgemm or onednn; default
    `engine`)."""
    w = weight.detach().t().contiguous().float()  # [out, in], the layout both libraries pack
    scales = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-8).double()
    zero_points = torch.zeros(w.size(0), dtype=torch.long)
    with warnings.catch_warnings(), _packing_for(kernels or engine()):
        warnings.simplefilter("ignore")  # the deprecation notices of the quantised API
        q = torch.quantize_per_channel(w, scales, zero_points, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(q, None)


def saturates(cpu_flags: str) -> bool:
    """Whether fbgemm's int8 products saturate on a CPU with these /proc/cpuinfo flags: without
    VNNI it multiplies u8 activations by s8 weights with ``vpmaddubsw``, which adds pairs of
    products in int16, so 255 * 127 * 2 overflows where 127 * 127 * 2 does not."""
    return "avx512_vnni" not in cpu_flags.split()


@lru_cache(maxsize=1)
def reduce_range() -> bool:
    """Whether the units' products quantise activations to 7 bits (0..127) rather than 8: where
    the products would saturate (`saturates`). On an AVX2-only CPU the full range cost a
    step's recurrent product 5.7% relative error against 1.0% with 7 bits, and the quickstart
    model's int8 output fell to self-BLEU 77 (docs/performance.md, "int8 decoding"). torch's
    dynamic ``nn.Linear`` always reduces. Where /proc/cpuinfo cannot be read: reduce."""
    flags = cpu_flags()
    return True if flags is None else saturates(flags)


# What int8 decoding gained where products saturate (no VNNI): the quickstart model at 1,000
# updates on a 2-core AMD EPYC with AVX2 only, one thread, the Bible test set, c95554b+
# (results/cpu-classes/, docs/performance.md "CPU classes").
NO_VNNI_MEASURED = "1.34x fp32's sentences/s at self-BLEU 90.9 (quickstart model, AVX2-only EPYC)"


def cpu_note() -> Optional[str]:
    """A line for the user where int8 decoding gains little on this CPU (no VNNI: 7-bit
    activations, pairs of products summed in int16), else None."""
    if not reduce_range():
        return None
    return ("note: this CPU has no avx512_vnni, so int8 products use 7-bit activations and gain less: measured "
            f"{NO_VNNI_MEASURED}; time both on your model (--speed) before choosing --int8")


def product(x: Tensor, packed: Any, addend: Optional[Tensor] = None) -> Tensor:
    """``x @ weight (+ addend)`` with the int8 twin of ``weight``; x [..., in] in fp32."""
    out = torch.ops.quantized.linear_dynamic(x.contiguous(), packed, reduce_range())
    return out if addend is None else out + addend


def decoding_device(requested: str) -> torch.device:
    """The device an int8 model decodes on: the CPU, also for ``auto`` on a machine with a
    GPU; any other device is a `UserError`."""
    from rnmt.device import pick_device
    from rnmt.errors import UserError

    device = pick_device("cpu" if requested == "auto" else requested)
    if device.type != "cpu":
        raise UserError(f"int8 decoding runs on the CPU, not {device}")
    return device


def quantize_for_decoding(model: nn.Module, keep_fp32: Optional[Callable[[str], bool]] = None,
                          kernels: Optional[str] = None) -> nn.Module:
    """Quantise ``model``'s products to int8 in place (see the module docstring); returns it
    in eval mode. CPU only. ``kernels``: fbgemm or onednn (default `engine`). ``keep_fp32(name)``
    true leaves a product in fp32: ``name`` is an ``nn.Linear``'s module name or a unit's
    module name plus ``.weight_h`` / ``.weight_x`` (benchmarks/int8_decode.py --layers
    measures each group)."""
    if any(p.device.type != "cpu" for p in model.parameters()):
        raise ValueError("int8 decoding runs on the CPU; load the model with device cpu")
    keep = keep_fp32 or (lambda name: False)
    kernels = engine_for(None, kernels) if kernels else engine()
    model.eval()
    products.plain_linears(model)  # PyTorch quantises nn.Linear itself, not a subclass
    linears = {name: torch.ao.quantization.per_channel_dynamic_qconfig
               for name, module in model.named_modules()
               if isinstance(module, nn.Linear) and module.out_features > 1 and not keep(name)}
    units = list(model.named_modules())
    with warnings.catch_warnings(), _packing_for(kernels):
        warnings.simplefilter("ignore")
        torch.ao.quantization.quantize_dynamic(model, linears, dtype=torch.qint8, inplace=True)
    for module_name, module in units:
        for name in ("h", "x"):
            weight = getattr(module, f"weight_{name}", None)
            if (isinstance(weight, nn.Parameter) and hasattr(module, f"int8_{name}")
                    and not keep(f"{module_name}.weight_{name}")):
                setattr(module, f"int8_{name}", pack(weight, kernels))
    return model


def is_int8_linear(module: nn.Module) -> bool:
    """Whether ``module`` is a linear layer `quantize_for_decoding` made int8."""
    return isinstance(module, torch.ao.nn.quantized.dynamic.Linear)


def linear_rows(layer: nn.Module, rows: Tensor, kernels: Optional[str] = None) -> nn.Module:
    """An int8 linear layer cut to its outputs ``rows`` (a lexical shortlist's words,
    `rnmt.search.shortlist`): the same int8 weights and scales, packed again for ``kernels``
    (default `engine`), so each kept output is computed exactly as before."""
    weight, bias = layer.weight(), layer.bias()
    with warnings.catch_warnings(), _packing_for(kernels or engine()):
        warnings.simplefilter("ignore")  # the deprecation notices of the quantised API
        q = torch.quantize_per_channel(weight.dequantize()[rows], weight.q_per_channel_scales()[rows],
                                       weight.q_per_channel_zero_points()[rows], 0, torch.qint8)
        cut = torch.ao.nn.quantized.dynamic.Linear(layer.in_features, len(rows), bias_=bias is not None)
        cut.set_weight_bias(q, None if bias is None else bias[rows])
    return cut


def is_quantized(module: nn.Module) -> bool:
    """Whether any unit inside ``module`` multiplies with int8 twins."""
    return any(getattr(m, "int8_h", None) is not None for m in module.modules())
