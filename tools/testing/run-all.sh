#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The whole test suite: host-side checks, then the in-guest suite on every
# guest kernel. Ends with "N passed, N failed, N skipped".
#
#   tools/testing/run-all.sh [--kernels "stock p2p debug"] [--out DIR] [TEST...]
#
# TEST names in-guest tests (e.g. module_load); default: all of them. The
# transport tests run a second time over siw on the kernels of
# NRP_SIW_KERNELS (default "p2p"; empty for none). The test_pair_* tests
# run in two guests joined by a link (tools/vm/run-pair.sh) on the kernels
# of NRP_PAIR_KERNELS (default "stock p2p"; empty for none).
set -uo pipefail
. "$(dirname "$0")/../vm/lib.sh"

kernels=${NRP_KERNELS:-"stock p2p debug"}
# The debug kernel (KASAN, lockdep, kmemleak) runs about seven times slower
# than the others under TCG; by default it runs the tests that reach every
# part of the module once (load, connect, I/O, reset, teardown under load,
# P2P fixture). NRP_DEBUG_TESTS=all runs the whole suite there too.
debug_tests=${NRP_DEBUG_TESTS:-"module_load transport_registered connect reset_during_io teardown_live gpu_standin"}
out=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernels)	kernels=$2; shift 2 ;;
	--out)		out=$2; shift 2 ;;
	--)		shift; break ;;
	-*)		nrp_die "unknown option $1" ;;
	*)		break ;;
	esac
done
[ -n "$out" ] || out=$(mktemp -d /tmp/nrp-check.XXXXXX)
mkdir -p "$out"
out=$(cd "$out" && pwd)

pass=0 fail=0 skip=0
failed=()
result() { # STATUS NAME [DETAIL]
	case $1 in
	pass)	pass=$((pass + 1)); echo "PASS  $2${3:+  ($3)}" ;;
	skip)	skip=$((skip + 1)); echo "SKIP  $2${3:+  ($3)}" ;;
	*)	fail=$((fail + 1)); failed+=("$2"); echo "FAIL  $2${3:+  ($3)}" ;;
	esac
}

# The TAP lines of an in-guest run as results named KERNEL/TEST.
tap_results() { # KERNEL OUTPUT
	local k=$1 line n
	while IFS= read -r line; do
		case "$line" in
		"ok "*"# SKIP"*)
			n=$(echo "$line" | sed -E 's/^ok [0-9]+ ([^ ]+).*/\1/')
			result skip "$k/$n" "${line#*# SKIP }" ;;
		"ok "*)
			n=$(echo "$line" | sed -E 's/^ok [0-9]+ ([^ ]+).*/\1/')
			result pass "$k/$n" ;;
		"not ok "*)
			n=$(echo "$line" | sed -E 's/^not ok [0-9]+ ([^ ]+).*/\1/')
			result fail "$k/$n" "${line#*# }"
			# show what the failing test said
			awk -v t="# --- $n" '$0 == t {p = 1; next} /^# --- / {p = 0} p' \
				"$2" | tail -n 15 | sed 's/^/      /' ;;
		esac
	done < <(cat "$2" 2>/dev/null)
}

# The boot itself is a test: a splat, a hang or a lost guest fails it.
boot_results() { # NAME GUEST-OUT STATUS
	local k=$1 gout=$2 known
	case $3 in
	0|1)	if [ -s "$gout/splats.txt" ]; then
			result fail "$k/kernel-log-clean" "see $gout/splats.txt"
			head -n 20 "$gout/splats.txt" | sed 's/^/      /'
		else
			known=
			[ -s "$gout/known-splats.txt" ] &&
				known="known upstream reports: $(grep -c . "$gout/known-splats.txt"), see $gout/known-splats.txt"
			result pass "$k/kernel-log-clean" "$known"
		fi ;;
	*)	result fail "$k/guest-completed" "timeout or crash, see $gout/console.log"
		tail -n 20 "$gout/console.log" | sed 's/^/      /' ;;
	esac
}

start=$SECONDS
nrp_log "results in $out"

# Packages and cached guest kernels: quick when everything is in place.
setup_args=()
case " $kernels " in *" debug "*) setup_args=(--with-debug-kernel) ;; esac
"$NRP_TOP/tools/setup.sh" "${setup_args[@]}" || nrp_die "setup failed"

# Host-side tests: the build and its checks.
for t in "$NRP_TOP"/tools/testing/host/test_*.sh; do
	name=host/$(basename "$t" .sh)
	name=${name/test_/}
	bash "$t" >"$out/${name//\//-}.log" 2>&1
	case $? in
	0) result pass "$name" ;;
	4) result skip "$name" "$(tail -n1 "$out/${name//\//-}.log")" ;;
	*) result fail "$name"; sed 's/^/      /' "$out/${name//\//-}.log" | tail -n 20 ;;
	esac
done

# One guest boot of kernel $2 runs a command of the in-guest suite; its TAP
# lines and the boot itself become the results $1/...
suite_run() { # TAG KERNEL [run-guest.sh options] -- COMMAND...
	local tag=$1 k=$2 grc
	shift 2
	"$NRP_TOP/tools/vm/run-guest.sh" --kernel "$k" --out "$out/guest-$tag" \
		--timeout "${NRP_GUEST_TIMEOUT:-2400}" "$@" 2>"$out/guest-$tag.log"
	grc=$?
	tap_results "$tag" "$out/guest-$tag/output.txt"
	boot_results "$tag" "$out/guest-$tag" "$grc"
}

# The tests named on the command line, as run_tests.sh names them.
named=()
for t in "$@"; do
	t=${t%.sh}
	named+=("${t#test_}")
done

# One guest boot per kernel runs the whole in-guest suite.
foreign=
for k in $kernels; do
	# test_pair_* run in the guest pair below
	tests=()
	for t in "${named[@]}"; do
		case $t in pair_*) ;; *) tests+=("$t") ;; esac
	done
	[ $# -gt 0 ] && [ ${#tests[@]} = 0 ] && continue
	# the module built for another kernel, to check that loading it is refused
	case $k in
	stock)	other=p2p ;;
	*)	other=stock ;;
	esac
	if fdir=$("$NRP_TOP/tools/vm/build-module.sh" "$other" 2>"$out/build-$other.log"); then
		foreign=$fdir/nvme-rdma-p2p.ko
	else
		result fail "$k/build-foreign-module" "see $out/build-$other.log"
		foreign=
	fi
	nrp_log "guest $k: running the in-guest suite"
	if [ "$k" = debug ] && [ $# = 0 ] && [ "$debug_tests" != all ]; then
		read -ra tests <<<"$debug_tests"
	fi
	suite_run "$k" "$k" --foreign-ko "$foreign" \
		-- tools/testing/selftests/nvme-rdma-p2p/run_tests.sh "${tests[@]}"
done

# The transport tests once more over siw (soft iWARP), on the kernels of
# NRP_SIW_KERNELS (default: p2p; the stock kernel has no siw). When tests
# are named, only those of this list.
siw_kernels=${NRP_SIW_KERNELS-p2p}
# Not target_restart: over siw the target's cleanup after it (removing the
# nvmet port, which destroys the iWARP listener) sometimes never returns in
# the guest; the same hang stops the target guest of run-pair.sh --rdma siw.
siw_all=(connect connect_all connect_options bad_input admin_commands fio_verify
	filesystems mapping_modes max_transfer poll_queues reset_during_io
	teardown_live)
siw_tests=()
for t in "${siw_all[@]}"; do
	if [ $# = 0 ] || [[ " ${named[*]} " == *" $t "* ]]; then
		siw_tests+=("$t")
	fi
done
for k in $kernels; do
	[ ${#siw_tests[@]} -gt 0 ] || break
	case " $siw_kernels " in *" $k "*) ;; *) continue ;; esac
	nrp_log "guest $k: the transport tests over siw"
	suite_run "$k-siw" "$k" \
		-- NRP_RDMA_TYPE=siw tools/testing/selftests/nvme-rdma-p2p/run_tests.sh "${siw_tests[@]}"
done

# Two guests joined by an Ethernet link (tools/vm/run-pair.sh): link loss,
# link timeouts, target restart and target power loss, which one guest
# cannot show (soft RDMA between two addresses of one guest ignores link
# state). On the kernels of NRP_PAIR_KERNELS (default: stock and p2p) that
# are also selected; when tests are named, only the named test_pair_* ones.
# A pair boot costs about 13 minutes for all of them under TCG, so kernels
# other than stock run the data-path ones (link loss, target restart)
# unless NRP_PAIR_TESTS=all.
pair_kernels=${NRP_PAIR_KERNELS-"stock p2p"}
pair_all=(pair_link_loss pair_link_timeouts pair_target_restart pair_target_crash)
pair_subset=(pair_link_loss pair_target_restart)
pair_tests=()
if [ $# = 0 ]; then
	pair_tests=("${pair_all[@]}")
else
	for t in "${named[@]}"; do
		case $t in pair_*) pair_tests+=("$t") ;; esac
	done
fi
for k in $kernels; do
	[ ${#pair_tests[@]} -gt 0 ] || break
	case " $pair_kernels " in *" $k "*) ;; *) continue ;; esac
	pout=$out/pair-$k
	ptests=("${pair_tests[@]}")
	if [ $# = 0 ] && [ "$k" != stock ] && [ "${NRP_PAIR_TESTS:-}" != all ]; then
		ptests=("${pair_subset[@]}")
	fi
	nrp_log "guest pair $k: ${ptests[*]}"
	"$NRP_TOP/tools/vm/run-pair.sh" --kernel "$k" --out "$pout" \
		--timeout "${NRP_GUEST_TIMEOUT:-2400}" \
		-- tools/testing/selftests/nvme-rdma-p2p/run_tests.sh "${ptests[@]}" \
		2>"$out/pair-$k.log"
	tap_results "$k" "$pout/host/output.txt"
	# each guest's boot: finished (exit-status written) and clean
	for g in host target; do
		st=0
		[ -s "$pout/$g/exit-status" ] || st=2
		boot_results "$k/pair-$g" "$pout/$g" "$st"
	done
	# the target guest served until told to stop
	if [ "$(cat "$pout/target/exit-status" 2>/dev/null)" != 0 ]; then
		result fail "$k/pair-target-served" "see $pout/target/output.txt"
		tail -n 10 "$pout/target/output.txt" 2>/dev/null | sed 's/^/      /'
	fi
done

nrp_log "finished in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
