# make/apt-install.sh — sourced by the make/*-tools.sh scripts that install a real server program
# from a Debian package for the tests that run it on loopback (make/redis-tools.sh,
# make/observability-tools.sh). Not executable on its own.
#
# apt_install_if_missing TAG BINARY PACKAGE SERVICE HINT
#   Does nothing but report the binary when a working BINARY (`BINARY --version` succeeds) is on
#   PATH. Otherwise installs Debian's PACKAGE with apt-get (through `sudo -n` when not root), then
#   stops and disables SERVICE, which the package starts: the tests run their own instances on free
#   loopback ports. Messages start with "TAG: "; HINT says how to install the binary by hand when
#   apt-get is not available (the script then exits 1).

apt_install_if_missing() {
	local tag=$1 binary=$2 package=$3 service=$4 hint=$5
	if command -v "$binary" >/dev/null && "$binary" --version >/dev/null 2>&1; then
		echo "$tag: using $(command -v "$binary") ($("$binary" --version 2>&1 | head -n1))"
		return
	fi
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		sudo=(sudo -n)
	fi
	command -v apt-get >/dev/null || {
		echo "$tag: $binary is missing and apt-get is not available: $hint" >&2
		exit 1
	}
	echo "$tag: installing Debian's $package package with apt-get"
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "$package"
	if [ -d /run/systemd/system ]; then
		"${sudo[@]}" systemctl disable --now "$service" || true
	elif [ -x "/etc/init.d/$service" ]; then
		"${sudo[@]}" "/etc/init.d/$service" stop || true
	fi
	echo "$tag: installed $("$binary" --version 2>&1 | head -n1)"
}
