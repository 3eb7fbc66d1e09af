"""The web page in a real headless browser: Debian's chromium driven by Playwright.

Skips (with the reason) when Playwright or the chromium binary is missing; ``.ci/run``
installs chromium when it runs as root.
"""

from __future__ import annotations

from tests.browser_support import CHROMIUM, FLAGS, browser_or_skip
from tests.serve_support import live_server, make_app


def test_type_translate_and_see_the_output_and_heatmap(tiny_run, tmp_path):
    sync_playwright = browser_or_skip()
    app = make_app(tiny_run)
    sentence = "Y dijo Dios: Sea la luz."
    with live_server(app) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=60_000)
        try:
            page = browser.new_page()
            requests = []
            page.on("request", lambda req: requests.append(req.url))
            page.goto(url + "/", timeout=30_000)
            page.wait_for_function("document.body.dataset.model !== undefined", timeout=30_000)
            assert "es → en" in page.text_content("#model-info")
            page.fill("#source", sentence)
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'done'", timeout=60_000)

            import httpx
            expected = httpx.post(f"{url}/translate", timeout=30,
                                  json={"texts": [sentence], "beam": int(page.input_value("#beam")),
                                        "return_alignment": True}).json()["translations"][0]
            assert page.locator("#output p.translation").all_text_contents() == [expected["text"]]

            alignment = expected["alignment"]
            rows = page.locator("#attention tbody tr")
            assert rows.count() == len(alignment["tgt_tokens"])
            cells = page.locator("#attention tbody td")
            assert cells.count() == len(alignment["tgt_tokens"]) * len(alignment["src_tokens"])
            header = page.locator("#attention thead th span").all_text_contents()
            assert header == alignment["src_tokens"]

            cell = cells.nth(0)
            cell.hover()
            info = page.text_content("#hover-info")
            src_tok, tgt_tok = alignment["src_tokens"][0], alignment["tgt_tokens"][0]
            assert f"source: {src_tok}" in info and f"target: {tgt_tok}" in info
            assert page.locator("#attention th.hl").count() == 2
            page.screenshot(path=str(tmp_path / "page.png"), full_page=True)

            # the page's repeat-blocking field reaches the search: the same output as the API's
            assert page.input_value("#no-repeat-ngram") == "0"  # the model's default (GET /model)
            page.fill("#no-repeat-ngram", "1")
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'done'", timeout=60_000)
            blocked = httpx.post(f"{url}/translate", timeout=30,
                                 json={"texts": [sentence], "beam": int(page.input_value("#beam")),
                                       "no_repeat_ngram": 1}).json()["translations"][0]
            assert page.locator("#output p.translation").all_text_contents() == [blocked["text"]]

            # and so does the minimum output length field
            assert page.input_value("#min-output-tokens") == "0"
            page.fill("#min-output-tokens", "3")
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'done'", timeout=60_000)
            longer = httpx.post(f"{url}/translate", timeout=30,
                                json={"texts": [sentence], "beam": int(page.input_value("#beam")),
                                      "no_repeat_ngram": 1, "min_output_tokens": 3}).json()["translations"][0]
            assert page.locator("#output p.translation").all_text_contents() == [longer["text"]]

            origin = url.rstrip("/")
            assert all(u.startswith(origin) for u in requests), [u for u in requests if not u.startswith(origin)]
        finally:
            browser.close()


def test_the_api_key_field_sends_the_key_and_a_refused_key_is_explained(tiny_run):
    sync_playwright = browser_or_skip()
    key = "s3cret-page-key"
    app = make_app(tiny_run, api_key=key)
    with live_server(app) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS, timeout=60_000)
        try:
            page = browser.new_page()
            sent = {}  # path -> the Authorization header of its last request

            def record(request):
                sent[request.url.removeprefix(url)] = request.headers.get("authorization")

            page.on("request", record)
            page.goto(url + "/", timeout=30_000)
            # Without a key the model information is refused, and the page says what to do.
            page.wait_for_function("document.getElementById('model-info').classList.contains('error')",
                                   timeout=30_000)
            assert "needs an API key (401)" in page.text_content("#model-info")

            page.fill("#api-key", key)
            page.press("#api-key", "Enter")
            page.wait_for_function("document.body.dataset.model !== undefined", timeout=30_000)
            assert "es → en" in page.text_content("#model-info")
            page.fill("#source", "Y dijo Dios: Sea la luz.")
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'done'", timeout=60_000)
            assert page.locator("#output p.translation").count() == 1
            assert sent["/model"] == sent["/translate"] == f"Bearer {key}"
            # Kept for this tab's session only: a reload finds it, localStorage never has it.
            assert page.evaluate("sessionStorage.getItem('rnmt-api-key')") == key
            assert page.evaluate("localStorage.length") == 0
            page.reload(timeout=30_000)
            page.wait_for_function("document.body.dataset.model !== undefined", timeout=30_000)
            assert page.input_value("#api-key") == key

            page.fill("#api-key", "not-the-key")
            page.click("#translate")
            page.wait_for_function("document.body.dataset.state === 'error'", timeout=60_000)
            assert sent["/translate"] == "Bearer not-the-key"
            assert "refused this API key (401)" in page.text_content("#output p.error")
        finally:
            browser.close()
