"""What this CPU is, and the speed rules measured on each kind of CPU.

`CpuFeatures` reads the processor's vendor and instruction-set flags once from
/proc/cpuinfo; the rules below turn them (and a model's size) into a choice with its reason,
the same choice for the same machine every time. They replace timings made at every start,
which on a loaded machine moved across their thresholds from one run to the next (the bf16
probe read 1.17x and 1.48x against 1.5x in two consecutive runs; oneDNN's fp32 products
1.13-1.27x against 1.15x on a Zen 4). Each rule cites the measurement behind it in
docs/performance.md; `rnmt.plan` records the choices a run makes and why.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import FrozenSet, Optional, Tuple

# Flags the rules read; `CpuFeatures.describe` names the ones present.
RELEVANT_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")
# Models narrower than this train in fp32 whatever the CPU: their products are too small
# for bf16 to pay (docs/performance.md, "bf16 training").
BF16_MIN_HIDDEN = 128
# On a Xeon with AMX oneDNN compiles a kernel for every new bf16 product shape (3.6-4.7 ms
# each), which a batch's small products do not win back: a batch's bf16 products, new shapes
# included, ran 0.73-1.03x fp32's at 256 units and 1.61-1.87x at 512, where bf16 trained
# 1.17-1.32x faster (docs/performance.md, "An Intel Xeon with AMX"). Between the two sizes
# nothing was measured: fp32 keeps them.
AMX_BF16_MIN_HIDDEN = 512


@dataclass(frozen=True)
class CpuFeatures:
    """A processor's vendor (``vendor_id``: AuthenticAMD, GenuineIntel, ...) and flags."""

    vendor: str = ""
    flags: FrozenSet[str] = frozenset()

    def has(self, flag: str) -> bool:
        return flag in self.flags

    @property
    def amd(self) -> bool:
        return self.vendor == "AuthenticAMD"

    def describe(self) -> str:
        """One short phrase: the vendor and the flags the rules read."""
        present = [f for f in RELEVANT_FLAGS if f in self.flags]
        shown = " ".join(present) if present else "none of " + "/".join(RELEVANT_FLAGS)
        return f"{self.vendor or 'unknown vendor'}, {shown}"

    def to_dict(self) -> dict:
        return {"vendor": self.vendor, "flags": sorted(f for f in self.flags if f in RELEVANT_FLAGS)}


def parse_cpuinfo(text: str) -> CpuFeatures:
    """The first processor's ``vendor_id`` and ``flags`` in /proc/cpuinfo's text."""
    vendor, flags = "", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "flags" and not flags:
            flags = value
        if vendor and flags:
            break
    return CpuFeatures(vendor, frozenset(flags.split()))


@functools.lru_cache(maxsize=1)
def this_cpu() -> CpuFeatures:
    """This machine's `CpuFeatures` (no flags where /proc/cpuinfo cannot be read)."""
    try:
        return parse_cpuinfo(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return CpuFeatures()


def cpu_flags_line() -> Optional[str]:
    """The flags as one space-separated string, or None where /proc/cpuinfo gave none."""
    cpu = this_cpu()
    return " ".join(sorted(cpu.flags)) if cpu.flags else None


def bf16_training(cpu: CpuFeatures, hidden: int) -> Tuple[bool, str]:
    """Whether ``train.amp: auto`` trains a model of ``hidden`` units in bf16 on this CPU.

    docs/performance.md, "bf16 training" (the table "The processor decides first") and "CPU
    classes": an AMD EPYC with avx512_bf16 (Zen 4, Zen 5) runs bf16 products 2.1-2.7x fp32's
    and trains faster in bf16 from 256 units; an Intel Xeon with avx512_bf16 but no AMX runs
    them at 0.46-0.83x fp32's; a Xeon with AMX gains from `AMX_BF16_MIN_HIDDEN` units; a CPU
    without either flag has no bf16 products to gain from."""
    if hidden < BF16_MIN_HIDDEN:
        return False, f"hidden size {hidden} < {BF16_MIN_HIDDEN}: too small for bf16 to pay"
    if cpu.has("amx_bf16"):
        if hidden >= AMX_BF16_MIN_HIDDEN:
            return True, f"the CPU has amx_bf16 and hidden size {hidden} >= {AMX_BF16_MIN_HIDDEN}"
        return False, (f"the CPU has amx_bf16 but hidden size {hidden} < {AMX_BF16_MIN_HIDDEN}, where oneDNN's "
                       f"kernel builds for new shapes cost more than bf16 saves")
    if not cpu.has("avx512_bf16"):
        return False, "the CPU has no avx512_bf16 or amx_bf16: no fast bf16 products"
    if cpu.amd:
        return True, f"an AMD CPU with avx512_bf16, whose bf16 products ran 2.1-2.7x fp32's; hidden size {hidden}"
    return False, "avx512_bf16 without AMX on a non-AMD CPU: bf16 products measured slower than fp32 (0.46-0.83x)"


def onednn_fp32_products(cpu: CpuFeatures) -> Tuple[bool, str]:
    """Whether fp32 CPU products go through oneDNN rather than PyTorch's BLAS (MKL).

    docs/performance.md, "fp32 products through oneDNN": MKL runs its AVX2 code on AMD
    processors while oneDNN runs AVX-512 there (2.26-2.42x MKL at a unit's product on a Zen 5,
    training 1.83-1.91x; 1.13-1.27x on a Zen 4 in four processes); on Intel processors MKL runs
    AVX-512 itself (0.88-1.06x on a Xeon with AMX); without avx512f both run AVX2 and the BLAS
    stays (not measured)."""
    if not cpu.has("avx512f"):
        return False, "no avx512f: oneDNN and the BLAS run the same AVX2 code"
    if cpu.amd:
        return True, "an AMD CPU with avx512f, where MKL runs AVX2 code and oneDNN AVX-512"
    return False, "a non-AMD CPU, where MKL runs its AVX-512 code itself"


def int8_engine(cpu: CpuFeatures) -> Tuple[str, str]:
    """Whose int8 kernels decode: oneDNN's where the CPU has AMX int8 tiles (1.73-1.84x fp32
    against fbgemm's 1.39-1.58x on a Xeon with AMX; docs/performance.md, "int8 decoding"),
    fbgemm's elsewhere."""
    if cpu.has("amx_int8"):
        return "onednn", "the CPU has amx_int8, whose tiles fbgemm does not use"
    return "fbgemm", "no amx_int8: fbgemm's VNNI/AVX2 kernels"
