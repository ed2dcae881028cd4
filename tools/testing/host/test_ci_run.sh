#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# .ci/run, CI's entry point, runs "make check" as the README defines it,
# whatever the environment CI starts it in holds (issue 45). It runs with
# a stand-in make first in PATH that records its arguments, directory and
# environment, in an environment that sets every knob run-all.sh reads
# (each NRP_* name of run-all.sh and the guest scripts, among them its
# host_unset list: NRP_KERNELS, NRP_SHAPE_SMP, NRP_PAIR_KERNELS,
# NRP_RUN_GUEST...), every variable the Makefile takes from outside
# (SHARD, KDIR, ...) and make's own flags (MAKEFLAGS=-n would pass CI with
# no test run): make is run as "make check" in the checkout with none of
# them, and with NRP_CACHE as it was, which says where the caches are.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/bin"
cat >"$work/bin/make" <<EOF
#!/bin/bash
echo "\$*" >"$work/make.args"
pwd >"$work/make.pwd"
env >"$work/make.env"
EOF
chmod +x "$work/bin/make"

# The knobs: every NRP_* name run-all.sh and the guest scripts read
knobs=$(grep -ohE '\bNRP_[A-Z0-9_]+' "$TOP/tools/testing/run-all.sh" "$TOP"/tools/vm/*.sh | sort -u)
# run-all.sh's own list of the run's knobs, which the host tests run without
listed=$(sed -n '/^host_unset=()/,/; do$/p' "$TOP/tools/testing/run-all.sh" |
	grep -oE '\b(NRP_[A-Z0-9_]+|SHARD|LEDGERS?|RESUME)\b' | sort -u)
[ -n "$listed" ] || fail "no host_unset list in run-all.sh"
for v in $listed; do
	echo "$knobs" | grep -qx "$v" || knobs+=$'\n'"$v"
done
# the Makefile's variables that it does not set itself, what make takes
# from the environment: never assigned, assigned with ?=, or assigned only
# below an "ifeq ($(V),)" that asks whether it came from outside (KDIR)
mk=$TOP/Makefile
makevars=$(grep -oE '\$\([A-Z_]+\)' "$mk" | tr -d '$()' | sort -u | while read -r v; do
	case $v in MAKE | MAKEFILE_LIST) continue ;; esac
	awk -v v="$v" '
		$0 ~ "^ifeq \\(\\$\\(" v "\\)," && !asked { asked = NR }
		$0 ~ "^" v "[ \t]*\\?=" { ext = 1 }
		$0 ~ "^" v "[ \t]*:?=" && !set { set = NR }
		END { exit !(ext || !set || (asked && asked < set)) }' "$mk" && echo "$v"
done)
for v in SHARD KDIR LEDGER; do
	echo "$makevars" | grep -qx "$v" || fail "the Makefile's variables read here lack $v: $(echo $makevars)"
done
set_env=()
for v in $knobs $makevars; do
	set_env+=("$v=from-the-environment")
done
set_env+=(NRP_CACHE="$work/cache" MAKEFLAGS=-n MFLAGS=-n GNUMAKEFLAGS=-n MAKELEVEL=1
	NRP_KERNELS=stock NRP_SHAPE_SMP=2 NRP_PAIR_KERNELS= NRP_RUN_GUEST=/bin/true)
(cd /tmp && env "${set_env[@]}" PATH="$work/bin:$PATH" "$TOP/.ci/run") >"$work/run.log" 2>&1 ||
	{ cat "$work/run.log"; fail ".ci/run failed with a stand-in make"; }
[ -s "$work/make.args" ] || fail ".ci/run did not run make"
[ "$(cat "$work/make.args")" = check ] || fail ".ci/run ran 'make $(cat "$work/make.args")', not 'make check'"
[ "$(cat "$work/make.pwd")" = "$TOP" ] || fail ".ci/run ran make in $(cat "$work/make.pwd"), not $TOP"
left=$(grep -E '^NRP_' "$work/make.env" | grep -v "^NRP_CACHE=$work/cache$")
[ -z "$left" ] || fail "knobs reached make check: $(echo $left)"
grep -qx "NRP_CACHE=$work/cache" "$work/make.env" || fail "NRP_CACHE did not reach make check"
for v in $makevars MAKEFLAGS MFLAGS GNUMAKEFLAGS MAKELEVEL; do
	grep -q "^$v=" "$work/make.env" && fail "$v reached make check: $(grep "^$v=" "$work/make.env")"
done
echo ".ci/run: make check in $TOP; cleared $(echo $knobs | wc -w) NRP_* knobs (NRP_CACHE kept), the Makefile's $(echo $makevars) and make's flags"
exit 0
