#!/usr/bin/env bash
# Installs what building and testing pipetop needs, when it is missing:
# Debian packages (as root), the Go modules, and the npm packages of the
# Zarr v3 interop tests (zarrita, pinned by trainer/zarr/testdata/zarrita's
# package-lock.json). Safe to run again: it only acts on what is missing.
set -euo pipefail

packages=(
  libtorch-dev cmake g++ make    # the libtorch shim (CPU libtorch 1.13)
  libgloo-dev                     # Gloo headers: multi-rank CPU training through c10d
  libblosc-dev                    # blosc codecs through cgo
  python3-zarr python3-numcodecs  # zarr-python interop tests and the loader peer
  python3-torch                   # the Python publisher example and the loader peer
  tmux                            # end-to-end TUI tests and screenshots
  btop                            # the overhead comparison in bench/
  socat util-linux                # debugging the protocol; setpriv for the peer-credential test
  librsvg2-bin fonts-dejavu-core  # screenshots: SVG to PNG
  prometheus                      # exporter tests: promtool checks and a real Prometheus server
  chromium                        # pipetop report tests and screenshots: the page in a real headless browser
  python3-av python3-h5py ffmpeg  # video and HDF5 datasets: the read counting's tests write and read them
  python3-torchvision             # torchvision.io.read_video over PyAV: its reads are counted too
  libhdf5-dev hdf5-tools          # pipetrain data inspect/import of HDF5 files (cgo), h5repack in the advice's tests
  python3-pyflakes                # make lint: undefined names and unused imports in the Python client, examples and tests
)

# Node.js runs the Zarr v3 interop tests (zarrita). Debian's nodejs and
# npm are installed only when there is no npm at all, so that a Node.js
# from elsewhere is left alone.
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep 'install ok installed' >/dev/null || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing Debian packages: ${missing[*]}" >&2
    echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q "${missing[@]}"
fi

export PATH="/usr/local/go/bin:$PATH"
command -v go >/dev/null || { echo "install-deps: Go not found (expected /usr/local/go)" >&2; exit 1; }
go mod download

# go-nvml's cgo wrappers call NVML functions the header marks deprecated, so
# every go build, vet or test by hand (docs/ name many) warns unless
# CGO_CFLAGS silences it. The Makefile exports the flag; this makes it the
# Go default for this user too, once, only where the user's go env file does
# not set CGO_CFLAGS already (the Makefile's export is left out of the test).
if [ -z "$(env -u CGO_CFLAGS go env -changed CGO_CFLAGS)" ]; then
  echo "install-deps: go env -w CGO_CFLAGS='-O2 -g -Wno-deprecated-declarations' (go-nvml's deprecated NVML calls)"
  go env -w CGO_CFLAGS='-O2 -g -Wno-deprecated-declarations'
fi

# zarrita for the Zarr v3 interop tests, exactly as the lock file pins it.
zarrita=trainer/zarr/testdata/zarrita
cd "$(dirname "$0")/.."
if [ ! -f "$zarrita/node_modules/zarrita/package.json" ]; then
  echo "install-deps: npm ci in $zarrita (zarrita, for the Zarr v3 interop tests)"
  (cd "$zarrita" && npm ci --no-audit --no-fund --loglevel=error)
fi
