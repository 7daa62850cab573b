#!/usr/bin/env bash
# Build llama.cpp's llama-server once and print its path. The source is the llama.cpp tree vendored in
# llama-cpp-python's sdist on PyPI (pinned below), fetched with pip; only the llama-server target is built,
# without the web UI (LLAMA_USE_PREBUILT_UI=OFF: the build would otherwise download it) and without OpenSSL.
#
#   scripts/serve/llama_server.sh                     CPU build (the tests, CI)
#   scripts/serve/llama_server.sh --cuda [--arch 90]  CUDA build (a GPU sweep; needs nvcc)
#   scripts/serve/llama_server.sh --source F.tar.xz   build from a packed source instead of PyPI (a machine without network)
#   scripts/serve/llama_server.sh --pack-source F     write that packed source (about 10 MB) and exit
#   scripts/serve/llama_server.sh --path              print where the binary is or will be, and exit (nothing built)
#
# The binary is cached in $HYPERLOOM_LLAMA_CACHE (default ~/.cache/hyperloom/llama.cpp)/<version>-<flavor>/;
# a second run prints the cached path at once. The build log is beside it.
set -euo pipefail
cd "$(dirname "$0")/../.."

LLAMA_CPP_PYTHON_VERSION=0.3.36
flavor=cpu
arch=90
source_tarball=""
pack=""
path_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) flavor=cuda ;;
    --arch) arch="$2"; shift ;;
    --source) source_tarball="$(realpath "$2")"; shift ;;
    --pack-source) pack="$(realpath -m "$2")"; shift ;;
    --path) path_only=1 ;;
    *) echo "llama_server.sh: unknown option $1 (use --cuda, --arch N, --source F, --pack-source F, --path)" >&2; exit 2 ;;
  esac
  shift
done

cache="${HYPERLOOM_LLAMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hyperloom/llama.cpp}"
tag="$LLAMA_CPP_PYTHON_VERSION-$flavor"; [ "$flavor" = cuda ] && tag="$tag-sm$arch"
binary="$cache/$tag/bin/llama-server"
if [ "$path_only" = 1 ]; then
  echo "$binary"
  exit 0
fi
if [ -z "$pack" ] && [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi

src="$cache/src-$LLAMA_CPP_PYTHON_VERSION"
if [ ! -f "$src/CMakeLists.txt" ]; then
  mkdir -p "$cache"
  work="$(mktemp -d "$cache/.fetch.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  if [ -n "$source_tarball" ]; then
    tar -xJf "$source_tarball" -C "$work"
  else
    python="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}"
    echo "llama_server.sh: fetching llama-cpp-python $LLAMA_CPP_PYTHON_VERSION's sdist from PyPI" >&2
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: -d "$work" \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" >&2
    # The sources the server build reads: no docs, vocab models, tests, or web UI sources (prebuilt UI is off).
    tar -xzf "$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$work" \
      --exclude='*/vendor/llama.cpp/docs' --exclude='*/vendor/llama.cpp/models' --exclude='*/vendor/llama.cpp/tests' \
      --exclude='*/vendor/llama.cpp/tools/ui/src' --exclude='*/vendor/llama.cpp/tools/ui/static' --exclude='*/vendor/llama.cpp/tools/ui/tests' \
      --exclude='*/vendor/llama.cpp/tools/server/tests' --exclude='*/vendor/llama.cpp/examples' --exclude='*/vendor/llama.cpp/benches' \
      "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    mv "$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp" "$work/llama.cpp"
  fi
  rm -rf "$src"
  mv "$work/llama.cpp" "$src"
  # the build only adds examples and tests when asked; these stand in for the folders left out
  mkdir -p "$src/examples" "$src/tests"
  rm -rf "$work"
  trap - EXIT
fi

if [ -n "$pack" ]; then
  tar -cJf "$pack" -C "$cache" --transform "s,^src-$LLAMA_CPP_PYTHON_VERSION,llama.cpp," "src-$LLAMA_CPP_PYTHON_VERSION"
  echo "$pack"
  exit 0
fi

build="$cache/build-$tag"
options=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF
  # /props build_info names the source, not the hash of whatever git repository happens to enclose the cache
  -DLLAMA_BUILD_NUMBER=0 "-DLLAMA_BUILD_COMMIT=llama-cpp-python-$LLAMA_CPP_PYTHON_VERSION"
  "-DCMAKE_INSTALL_PREFIX=$cache/$tag"
)
[ "$flavor" = cuda ] && options+=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$arch" -DGGML_CUDA_NCCL=OFF)
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
log="$cache/build-$tag.log"
echo "llama_server.sh: building llama-server ($tag) with $(nproc) jobs; log $log" >&2
started=$(date +%s)
if ! { cmake -S "$src" -B "$build" "${generator[@]}" "${options[@]}" \
       && cmake --build "$build" --target llama-server -j "$(nproc)"; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  echo "llama_server.sh: the build failed; the whole log is $log" >&2
  exit 1
fi
mkdir -p "$(dirname "$binary")"
cp "$build/bin/llama-server" "$binary.tmp"
mv "$binary.tmp" "$binary"
echo "llama_server.sh: built in $(( $(date +%s) - started )) s" >&2
echo "$binary"
