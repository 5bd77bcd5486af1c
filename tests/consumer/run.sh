#!/usr/bin/env bash
# ctest InstallConsumer: installs BUILD into a temp prefix, builds tests/consumer against the
# exported package (find_package(oiw)), runs it and checks its output; the installed gguf-inspect
# finds its profiles in <prefix>/share/oiw/profiles.
#   run.sh BUILD_DIR SOURCE_DIR [SANITIZE=ON|OFF]
set -euo pipefail
build=$1 src=$2 sanitize=${3:-OFF}
tmp=$(mktemp -d /tmp/oiw-consumer-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
flags=()
case "$sanitize" in ON|on|1|TRUE|true) flags=(-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined) ;; esac
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$src/tests/consumer" -B "$tmp/build" -G Ninja "${launcher[@]}" "${flags[@]}" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
got=$("$tmp/build/oiw_consumer")
want='oiw 0.1.0
sha256(abc) ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
Q8_0 34 bytes sha256 cfac8f510e8251dbd2040ec4755a2833200850ff8f810ae274da602447710e26
{"type":"Q8_0","digest":"sha256"}'
if [ "$got" != "$want" ]; then
  printf 'consumer output differs.\n--- got\n%s\n--- want\n%s\n' "$got" "$want"; exit 1
fi
env -u OIW_PROFILE_DIR "$tmp/prefix/bin/gguf-inspect" --list-profiles | grep -q '^ggml-x86-avx2 '
echo "InstallConsumer: ok"
