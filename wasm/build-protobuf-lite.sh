#!/usr/bin/env bash
# Builds libprotobuf-lite for wasm from Debian's protobuf source (the exact
# version of the native protoc, 3.21.12: generated code only compiles against
# its own runtime version). Installs into build/cache/protobuf-wasm once; a
# later run sees the stamp file and returns immediately (~20 s on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX="$PWD/build/cache/protobuf-wasm"
STAMP="$PREFIX/.done"
[ -f "$STAMP" ] && exit 0

SRC=$(ls -d "$PWD"/build/cache/protobuf-src/protobuf-3.21.12 2>/dev/null || true)
if [ -z "$SRC" ] || [ ! -f "$SRC/CMakeLists.txt" ]; then
  echo "[protobuf-wasm] source missing under build/cache/protobuf-src (run .ci/setup)" >&2
  exit 1
fi

export NODE_PATH=/usr/share/nodejs  # emcc's JS optimizer needs Debian's acorn
BUILD="$PWD/build/cache/protobuf-wasm-build"
rm -rf "$BUILD" "$PREFIX"
echo "[protobuf-wasm] building libprotobuf-lite 3.21.12 with em++"
emcmake cmake -S "$SRC" -B "$BUILD" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -Dprotobuf_BUILD_TESTS=OFF \
  -Dprotobuf_BUILD_PROTOC_BINARIES=OFF \
  -Dprotobuf_BUILD_LIBPROTOC=OFF \
  -Dprotobuf_WITH_ZLIB=OFF \
  -Dprotobuf_BUILD_SHARED_LIBS=OFF \
  -Dprotobuf_INSTALL=ON >/dev/null
cmake --build "$BUILD" --target libprotobuf-lite -j2
# "install" would also want the full libprotobuf; copy what we need instead:
# the lite archive and the headers (the source tree's .h files).
mkdir -p "$PREFIX/lib" "$PREFIX/include"
cp "$BUILD/libprotobuf-lite.a" "$PREFIX/lib/"
(cd "$SRC/src" && find google \( -name "*.h" -o -name "*.inc" \) -exec cp --parents {} "$PREFIX/include" \;)
rm -rf "$BUILD"
touch "$STAMP"
echo "[protobuf-wasm] installed into build/cache/protobuf-wasm"
