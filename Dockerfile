# rnmt translation service, CPU only. Build and run (the model directory is mounted read-only):
#   docker build -t rnmt .
#   docker run --rm -p 8000:8000 -v "$PWD/runs/quickstart:/model:ro" rnmt
# Options after the image name are added to `rnmt serve`: `docker run ... rnmt --threads 4`.
# See docs/serving.md.

# Stage 1: the wheel, built from the same files as `make dist`.
FROM python:3.11-slim AS wheel
WORKDIR /src
COPY pyproject.toml setup.py MANIFEST.in README.md ./
COPY rnmt ./rnmt
COPY configs ./configs
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .

# Stage 2: the service.
FROM python:3.11-slim
# g++ compiles rnmt's C++ kernels (without it rnmt falls back to slower PyTorch operations).
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ \
    && rm -rf /var/lib/apt/lists/*
COPY --from=wheel /dist /dist
# CPU-only PyTorch from its own index; the serve extra adds FastAPI and uvicorn.
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu \
        "$(echo /dist/rnmt-*.whl)[serve]" \
    && rm -rf /dist
RUN useradd --create-home --uid 10001 rnmt
USER rnmt
WORKDIR /home/rnmt
# Compile the kernels into the image now, as the user that serves, rather than at every start.
# The build is tagged with the CPU's instruction sets: a host with other ones rebuilds once.
RUN python -c "from rnmt import kernels; assert kernels.extension() is not None, 'kernels unavailable'"
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
ENTRYPOINT ["rnmt", "serve", "--model", "/model", "--host", "0.0.0.0", "--port", "8000"]
