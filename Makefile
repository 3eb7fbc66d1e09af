# Set-up and the everyday commands: `make quickstart`, `make test` (or one tier: `make test-unit`,
# `make test-integration`, `make test-system`) and `make lint`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN := runs/quickstart

.PHONY: quickstart test test-unit test-integration test-system lint venv dist runtime-wheel clean web-assets

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e ".[test,serve]"
	touch $(STAMP)

# Train on the bundled corpus (1,000 updates), translate its test set, print BLEU/chrF.
quickstart: $(STAMP)
	rm -rf $(RUN)
	$(BIN)/rnmt train configs/quickstart.yaml --out $(RUN)
	$(BIN)/rnmt translate --model $(RUN) --input data/sample/test.es --output $(RUN)/test.hyp.en --speed
	$(BIN)/rnmt evaluate --hyp $(RUN)/test.hyp.en --ref data/sample/test.en

# All three tiers; or one alone (docs/architecture.md, "Tests": what each holds, how long it takes).
test: $(STAMP) web-assets
	$(BIN)/python -m pytest

test-unit: $(STAMP)
	$(BIN)/python -m pytest tests/unit

test-integration: $(STAMP)
	$(BIN)/python -m pytest tests/integration

test-system: $(STAMP) web-assets
	$(BIN)/python -m pytest tests/system

# The browser libraries of `rnmt export --web` (onnxruntime-web, a sentencepiece build), pinned
# by web/package-lock.json. Never fatal: without npm or the registry the in-browser export test
# skips with its reason, as the browser test does without chromium.
web-assets:
	@if command -v npm >/dev/null 2>&1; then \
		(cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) \
			|| echo "note: npm ci in web/ failed; the in-browser export test will skip" >&2; \
	else echo "note: npm not found; the in-browser export test will skip" >&2; fi

# ruff over everything, mypy over the public API (both configured in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

# The runtime alone (rnmt-runtime: onnxruntime, sentencepiece, numpy; no torch) as a wheel in
# dist/, from runtime/pyproject.toml; docs/deploy.md, "Runtime".
runtime-wheel: $(STAMP)
	$(BIN)/python -m pip wheel runtime/ --no-deps --no-build-isolation -w dist/ -q

# The sdist and, built from it, the wheel (C++ kernel sources and built-in configs included).
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -c "from setuptools import build_meta; build_meta.build_sdist('dist')"
	$(BIN)/pip wheel dist/rnmt-*.tar.gz --no-deps --no-build-isolation -w dist

clean:
	rm -rf $(VENV) runs dist build
