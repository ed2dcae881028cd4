# SPDX-License-Identifier: GPL-2.0
# Helpers of the tests of tools/nrp-check, on top of lib_p2p.sh: run it,
# read its verdicts, and ask the kernel (tools/nrp-p2pdist) what it
# decides for a pair of PCI devices.
. "$(dirname "${BASH_SOURCE[0]}")/lib_p2p.sh"

NRP_CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)/tools/nrp-check
NRP_P2PDIST=/sys/kernel/debug/nrp_p2pdist/query

# Run nrp-check with arguments $@, as text (shown in the test's log) and
# as JSON; both must exit alike and write nothing to stderr. Leaves the
# exit status in NRP_CHECK_RC and the facts, flattened to lines of
# "ID<tab>FIELD<tab>VALUE" (FIELD verdict, detail, fix, notes, data.KEY;
# ID "result" for the answer), in NRP_CHECK_FLAT.
nrp_check() {
	local rc_t
	NRP_CHECK_FLAT=/tmp/nrp-check.flat
	"$NRP_CHECK" --json "$@" >/tmp/nrp-check.json 2>/tmp/nrp-check.err
	NRP_CHECK_RC=$?
	[ -s /tmp/nrp-check.err ] && nrp_fail "nrp-check --json $*: $(cat /tmp/nrp-check.err)"
	"$NRP_CHECK" "$@" >/tmp/nrp-check.txt 2>&1
	rc_t=$?
	echo "nrp-check $* (exit $rc_t):"
	sed 's/^/  | /' /tmp/nrp-check.txt
	[ "$rc_t" = "$NRP_CHECK_RC" ] ||
		nrp_fail "nrp-check $*: exit $rc_t, with --json $NRP_CHECK_RC"
	python3 - /tmp/nrp-check.json >"$NRP_CHECK_FLAT" <<'PY' || nrp_fail "nrp-check --json $*: not the JSON it should be"
import json, sys
j = json.load(open(sys.argv[1]))
flat = lambda v: json.dumps(v) if isinstance(v, (list, dict, bool)) or v is None else str(v)
print("result\tresult\t%s" % j["result"])
print("result\treasons\t%s" % " | ".join(j["reasons"] + j["unknown"]))
print("result\tnamespaces\t%s" % " ".join(j["namespaces"]))
for f in j["facts"]:
    for k in ("verdict", "detail", "fix"):
        print("%s\t%s\t%s" % (f["id"], k, flat(f[k]) if f[k] is not None else ""))
    print("%s\tnotes\t%s" % (f["id"], " | ".join(f["notes"])))
    for k, v in f["data"].items():
        print("%s\tdata.%s\t%s" % (f["id"], k, flat(v)))
PY
}

# Field $2 of fact $1 of the last run ("missing" if it has none).
nrp_check_val() {
	awk -F'\t' -v id="$1" -v k="$2" '$1 == id && $2 == k { print $3; f = 1 }
		END { if (!f) print "missing" }' "$NRP_CHECK_FLAT"
}

# Fact $1 of the last run has verdict $2 and, with $3, says $3 (a fixed
# string) in its detail or notes.
nrp_check_expect() {
	local v text
	v=$(nrp_check_val "$1" verdict)
	[ "$v" = "$2" ] || nrp_fail "nrp-check: $1 is '$v', expected '$2': $(nrp_check_val "$1" detail)"
	[ -z "${3:-}" ] && return 0
	text="$(nrp_check_val "$1" detail) $(nrp_check_val "$1" notes)"
	[[ $text == *"$3"* ]] || nrp_fail "nrp-check: $1 does not say '$3': $text"
}

# The fix of fact $1 says $2.
nrp_check_fix() {
	local fix
	fix=$(nrp_check_val "$1" fix)
	[[ $fix == *"$2"* ]] || nrp_fail "nrp-check: the fix of $1 does not say '$2': '$fix'"
}

# The last run's answer is $1 (ready, not ready, cannot confirm) with the
# exit status that goes with it; with $2, one of its reasons says $2.
nrp_check_result() {
	local r want_rc=1
	r=$(nrp_check_val result result)
	[ "$r" = "$1" ] || nrp_fail "nrp-check: '$r', expected '$1': $(nrp_check_val result reasons)"
	[ "$1" = ready ] && want_rc=0
	[ "$NRP_CHECK_RC" = "$want_rc" ] || nrp_fail "nrp-check: '$r' but exit $NRP_CHECK_RC"
	[ -z "${2:-}" ] && return 0
	[[ $(nrp_check_val result reasons) == *"$2"* ]] ||
		nrp_fail "nrp-check: no reason says '$2': $(nrp_check_val result reasons)"
}

# Load the fixture that asks the kernel about pairs of PCI devices.
nrp_p2pdist_load() {
	nrp_must modprobe nrp_p2pdist
	nrp_cleanup_push "modprobe -r nrp_p2pdist"
	[ -w "$NRP_P2PDIST" ] || nrp_fail "no $NRP_P2PDIST"
}

# nrp-check's decision for provider $1 and PCI client $2 (pair fact $3,
# by default pair:$1:$2) in the last run is what the kernel decides: the
# DMA API's mapping of a page of $1's pool for $2 (peer bus address,
# through the host bridge, refused) and pci_p2pdma_distance_many()'s
# distance (-1 when refused).
nrp_check_vs_kernel() {
	local prov=$1 client=$2 id=${3:-pair:$1:$2} k dist map dec cdist
	echo "$prov $client" >"$NRP_P2PDIST" || nrp_fail "nrp_p2pdist refused '$prov $client'"
	k=$(cat "$NRP_P2PDIST")
	read -r _ _ _ _ _ dist _ map <<<"$k"
	dec=$(nrp_check_val "$id" data.decision)
	cdist=$(nrp_check_val "$id" data.distance)
	case $map in
	unknown:*) nrp_fail "the kernel's mapping of $prov for $client could not be tried: $k" ;;
	esac
	[ "$dec" = "$map" ] ||
		nrp_fail "nrp-check decides '$dec' for $prov -> $client, the kernel '$map' ($k)"
	if [ "$map" = refused ]; then
		[ "$dist" = -1 ] || nrp_fail "the kernel maps nothing but gives distance $dist: $k"
	else
		[ "$dist" = "$cdist" ] ||
			nrp_fail "nrp-check's distance $cdist for $prov -> $client, the kernel's $dist"
	fi
	echo "$prov -> $client: nrp-check '$dec' (distance $cdist), the kernel '$map' (distance $dist)"
}

# The first PCI device with vendor:device $1 ("0x1af4:0x1110") whose
# sysfs path matches the glob $2 (default: any), by address.
nrp_pci_find() {
	local d v p
	for d in /sys/bus/pci/devices/*; do
		v="$(cat "$d/vendor"):$(cat "$d/device")"
		[ "$v" = "$1" ] || continue
		p=$(readlink -f "$d")
		# shellcheck disable=SC2053 # a glob on purpose
		[[ $p == ${2:-*} ]] || continue
		basename "$d"
		return 0
	done
	return 1
}
