# Shared by tools/check and tools/quickstart: install what is missing, build.
# Sourced, not run.

RATELINE_PACKAGES=(
  g++ meson ninja-build pkg-config git
  liburing-dev libhwloc-dev libcli11-dev libgtest-dev libfmt-dev nlohmann-json3-dev
  python3 iproute2 nftables tcpdump tshark ethtool procps iputils-ping util-linux
  libxdp-dev libbpf-dev clang
)

ensure_packages() {
  local missing=()
  for p in "${RATELINE_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing packages: ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})" >&2
    return 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# build DIR [meson options...]: configure once, then build.
build_tree() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null
  fi
  ninja -C "$dir"
}
