# Shared by tools/check and tools/quickstart: install what is missing, build.
# Sourced, not run.

RATELINE_PACKAGES=(
  g++ meson ninja-build pkg-config git
  liburing-dev libhwloc-dev libcli11-dev libgtest-dev libfmt-dev nlohmann-json3-dev
  python3 iproute2 nftables tcpdump tshark tcpreplay ethtool procps iputils-ping util-linux
  libxdp-dev libbpf-dev clang
  libclang-rt-dev  # clang's libFuzzer/ASan/UBSan runtimes, matching the default clang (tools/check.d/20-fuzz)
  librsvg2-bin     # rsvg-convert: tests/integration/test_ceiling.py renders ceiling's SVG plot
  fio xfsprogs btrfs-progs e2fsprogs dosfstools  # tools/blocktest --fs, bench/blocktest (librsvg2-bin renders its SVG)
  libsodium-dev  # ceiling --serve/--remote --key-file: the agent's HMAC challenge-response
  ccache  # meson picks it up: a second tools/check on this machine compiles only what changed
  prometheus  # tests/integration/test_prometheus.py starts its own; the package's service is kept off (below)
)

# ccache keys on paths: make them relative to the checkout, and leave the
# build directory out of the hash (debug info keeps the first one's path), so a
# fresh clone elsewhere on this machine reuses what an earlier clone compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(pwd)}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}

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
  # None of these is installed for a service of its own, and Debian's
  # prometheus starts one on install, listening on *:9090 with its own
  # storage: a policy-rc.d that refuses every start keeps it (and any other)
  # from starting, and the unit is disabled so it does not start at boot.
  # The tests start the prometheus binary themselves, on addresses they choose.
  local policy=/usr/sbin/policy-rc.d made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# rateline tools/lib/common.sh: no service starts while packages install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
  fi
  local rc=0
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  if [ "$made_policy" -eq 1 ]; then rm -f "$policy"; fi
  if printf '%s\n' "${missing[@]}" | grep -qx prometheus && command -v systemctl >/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
  return $rc
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

# DPDK (drivers/dpdk, tests/integration/test_dpdk.py): its libraries and PMDs,
# and hugepages for its mempools. Without hugepages rateline falls back to
# --no-huge (and says so); with them it runs the way DPDK is meant to.
RATELINE_PACKAGES+=(libdpdk-dev dpdk)

# ensure_hugepages [N]: at least N (default 256) 2 MiB pages reserved and a
# hugetlbfs at /dev/hugepages. Root only; otherwise says what to run.
ensure_hugepages() {
  local want=${1:-256}
  local have
  have=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
  if [ "$(id -u)" -ne 0 ]; then
    [ "$have" -ge "$want" ] && mountpoint -q /dev/hugepages && return 0
    echo "hugepages: run as root: echo $want > /proc/sys/vm/nr_hugepages; mount -t hugetlbfs nodev /dev/hugepages" >&2
    return 0
  fi
  [ "$have" -ge "$want" ] || echo "$want" > /proc/sys/vm/nr_hugepages || true
  mkdir -p /dev/hugepages
  mountpoint -q /dev/hugepages || mount -t hugetlbfs nodev /dev/hugepages || true
  echo "hugepages: $(cat /proc/sys/vm/nr_hugepages) x 2 MiB reserved, $(awk '/HugePages_Free/ {print $2}' /proc/meminfo) free"
}
