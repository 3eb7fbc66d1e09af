"""Taking a trained model out of rnmt: ONNX graphs with explicit state, for translation
without PyTorch (docs/deploy.md; the directory format is docs/export-format.md).

One module per job: `source` (the plain model from a checkpoint), `graphs` (encode /
init_state / step as flat-tensor modules), `loops` (the encoder's time loops kept as ONNX
loops), `examples` (inputs to trace and check with), `onnx_writer` (tracing and writing one
graph), `writing` (the three graphs), `parity` (onnxruntime against PyTorch), `quantize`
(int8), `manifest`, `directory` (atomic writing) and `exporter` (all of it, for
`rnmt export`).
"""

from rnmt.export.exporter import export

__all__ = ["export"]
