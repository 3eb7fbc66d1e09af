"""Speed of every recurrent unit, forward + backward, on CPU, against torch.nn.GRU/LSTM.

    python -m benchmarks.cells_speed                      # 64 x 50 x 512, 2 threads
    python -m benchmarks.cells_speed --units gru atr torch-gru --repeats 3
"""

from __future__ import annotations

import argparse
import os

from rnmt.bench.cells import benchmark_cells, format_rows

DEFAULT_UNITS = ["torch-gru", "torch-lstm", "gru", "lstm", "srnn", "atr", "ran", "lau", "lgru", "tgru"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", nargs="+", default=DEFAULT_UNITS)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = benchmark_cells(args.units, args.batch, args.length, args.size, args.threads, args.repeats)
    print(f"batch {args.batch} x length {args.length} x size {args.size}, {args.threads} threads, "
          f"best of {args.repeats} round-robin passes, forward + backward")
    print(format_rows(rows))
    # Other processes skew absolute times; the round-robin ratios suffer much less.
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
