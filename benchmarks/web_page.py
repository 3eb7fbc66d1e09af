"""Speed and weight of the in-browser page (`rnmt export --web`), opened from the file system.

    python -m benchmarks.web_page --page EXPORT/web [--src test.es] [--beam 5] [--expected runtime.en]

Opens the page in headless chromium (Playwright, Debian's chromium; no server: a file://
URL), waits for it to load, translates every line of ``--src`` in the page (in its batches,
one thread, the manifest's search settings; ``--beam`` overrides the width)
and prints: load time, sentences/s, whether any request left the file system, how many
outputs equal ``--expected`` (e.g. ``rnmt translate --model EXPORT``'s, the Python
runtime), and the page's weight (bytes of each file, and in all). Defaults to the Bible
test set next to the checkout. ``--json PATH`` also writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

CHROMIUM = os.environ.get("RNMT_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def weight(page: Path) -> dict:
    return {str(p.relative_to(page)): p.stat().st_size for p in sorted(page.rglob("*")) if p.is_file()}


def measure(page: Path, lines: list, beam: int | None, timeout_s: float) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=60_000)
        try:
            tab = browser.new_page()
            requests: list = []
            tab.on("request", lambda req: requests.append(req.url))
            start = time.perf_counter()
            tab.goto((page / "index.html").resolve().as_uri(), timeout=60_000)
            tab.wait_for_function("['ready', 'error'].includes(document.body.dataset.state)", timeout=180_000)
            loaded = time.perf_counter() - start
            if tab.evaluate("document.body.dataset.state") != "ready":
                raise SystemExit(f"the page did not load: {tab.text_content('#status')}")
            tab.set_default_timeout(timeout_s * 1000)
            result = tab.evaluate("([lines, beam]) => window.rnmtPage.translateLines(lines, beam)", [lines, beam])
            info = tab.text_content("#model-info")
        finally:
            browser.close()
    remote = [u for u in requests if not u.startswith(("file://", "blob:", "data:"))]
    return {"load_seconds": loaded, "seconds": result["seconds"], "outputs": result["outputs"], "model": info,
            "requests": len(requests), "remote_requests": remote}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--page", required=True, help="the page's folder (holds index.html)")
    parser.add_argument("--src", default="../shared/data/bible-es-en/test.es")
    parser.add_argument("--beam", type=int, default=None, help="beam width (default: the export's)")
    parser.add_argument("--expected", help="outputs to compare with, one line per source line")
    parser.add_argument("--output", help="write the page's translations here")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds the translation may take")
    args = parser.parse_args()
    page = Path(args.page)
    lines = Path(args.src).read_text(encoding="utf-8").splitlines()
    got = measure(page, lines, args.beam, args.timeout)
    n, seconds = len(lines), got["seconds"]
    print(f"model: {got['model']}" + (f" (measured at beam {args.beam})" if args.beam else ""))
    print(f"loaded in {got['load_seconds']:.1f} s; {n} lines in {seconds:.1f} s: {n / seconds:.2f} sentences/s "
          f"({1000 * seconds / n:.0f} ms per sentence); {got['requests']} requests, "
          f"{len(got['remote_requests'])} outside the file system")
    if args.expected:
        expected = Path(args.expected).read_text(encoding="utf-8").splitlines()
        same = sum(a == b for a, b in zip(got["outputs"], expected))
        got["equal_to_expected"] = same
        print(f"equal to {args.expected}: {same} of {n} lines")
    sizes = weight(page)
    for name, size in sizes.items():
        print(f"  {size:>12,}  {name}")
    print(f"  {sum(sizes.values()):>12,}  in all ({len(sizes)} files)")
    if args.output:
        Path(args.output).write_text("\n".join(got["outputs"]) + "\n", encoding="utf-8")
    if args.json:
        record = {k: v for k, v in got.items() if k != "outputs"}
        record.update(lines=n, beam=args.beam, sentences_per_second=n / seconds, weight=sizes,
                      total_bytes=sum(sizes.values()))
        Path(args.json).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
