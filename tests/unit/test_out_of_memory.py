"""A failed allocation is one line that says what to lower; any other error is not one."""

import pytest
import torch

from rnmt.errors import out_of_memory


def test_the_cpu_allocators_refusal_is_read_with_its_size():
    with pytest.raises(RuntimeError) as caught:
        torch.empty(2**50, dtype=torch.uint8)  # a petabyte: refused on any machine
    line = out_of_memory(caught.value, "translate")
    assert line == "out of memory: could not allocate 1048576.0 GiB; try a smaller --beam, --nbest or --batch-tokens"


def test_gpu_and_python_allocation_failures_are_recognised():
    class OutOfMemoryError(RuntimeError):  # torch.OutOfMemoryError's name, raised by CUDA's allocator
        pass

    gpu = OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.1 GiB total capacity)")
    assert out_of_memory(gpu, "train") == ("out of memory: could not allocate 20.00 GiB; "
                                           "try a smaller data.batch_tokens, max_len or model")
    assert out_of_memory(MemoryError(), None) == "out of memory: an allocation failed; try less data at once"


def test_other_errors_are_not_taken_for_memory():
    assert out_of_memory(RuntimeError("shape mismatch"), "translate") is None
    assert out_of_memory(ValueError("can't allocate memory"), "translate") is None
