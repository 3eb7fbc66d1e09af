# Shared helpers for the peers' setup.sh scripts (sourced, not run).
#
#   PYTHON   interpreter the venv is made from (default: python3.11)
#   TORCH    torch requirement installed into every peer venv (default: torch==2.13.0)
#
# Every peer venv gets the same torch as rnmt's own environment, so that the comparison
# measures the toolkits and not different torch builds.

set -euo pipefail

PYTHON="${PYTHON:-python3.11}"
TORCH="${TORCH:-torch==2.13.0}"

# make_venv DIR: a fresh venv with an up-to-date pip and the pinned torch.
make_venv() {
    local dir="$1"
    if [ -x "$dir/bin/python" ]; then
        echo "reusing $dir"
    else
        "$PYTHON" -m venv "$dir"
    fi
    "$dir/bin/python" -m pip install --quiet --upgrade pip wheel
    "$dir/bin/python" -m pip install --quiet "$TORCH"
}

# pip_in DIR ARGS...: pip install inside the venv, with torch held at the pinned version
# so that no dependency can replace it.
pip_in() {
    local dir="$1"; shift
    local pin
    pin="$(mktemp)"
    echo "$TORCH" > "$pin"
    "$dir/bin/python" -m pip install --quiet -c "$pin" "$@"
    rm -f "$pin"
}

# try_pip_in DIR PACKAGE...: like pip_in for optional requirements, one package at a time;
# a package that does not install is reported and skipped.
try_pip_in() {
    local dir="$1"; shift
    local pkg
    for pkg in "$@"; do
        if ! pip_in "$dir" "$pkg"; then
            echo "warning: optional requirement '$pkg' did not install; continuing without it" >&2
        fi
    done
}
