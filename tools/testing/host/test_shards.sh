#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A tier run in shards (make check-full SHARD=K/N): run on a stand-in
# guest (fixtures/stub-run-guest.sh) and stand-in host tests, with the
# parts of the check tier (host tests, stock, stock-6.12, p2p-6.12... here
# host, stock and stock-6.12). Two shards run different parts that add up
# to the whole; --merge of both gives the one summary line with every
# result; --merge refuses a missing shard and shards of different commits;
# --resume after an interrupted shard runs only the part that had not
# finished, keeping the others' results.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stub=$TOP/tools/testing/host/fixtures/stub-run-guest.sh
mkdir -p "$work/host"
# a stand-in host test that fails if the run's own knobs reached it:
# make check-full SHARD=K/N exports SHARD, and the real host tests start
# run-all.sh themselves
cat >"$work/host/test_standin.sh" <<'EOS'
#!/bin/bash
echo host stand-in
[ -z "${SHARD+x}${NRP_KERNELS+x}${NRP_TIER+x}" ] ||
	{ echo "the run's knobs reached a host test: SHARD=${SHARD-} NRP_KERNELS=${NRP_KERNELS-} NRP_TIER=${NRP_TIER-}"; exit 1; }
exit 0
EOS

# a stand-in guest that counts its boots
cat >"$work/guest" <<EOS
#!/bin/bash
echo boot >>"$work/boots"
exec "$stub" "\$@"
EOS
chmod +x "$work/guest"
# as make check-full SHARD=K/N runs it: SHARD in the environment too (make
# exports it), here a different one, which must change nothing
run() { # OUT [run-all options]
	local o=$1
	shift
	SHARD=2/7 NRP_KERNELS=p2p NRP_RUN_GUEST=$work/guest NRP_HOST_TESTS=$work/host "$TOP/tools/testing/run-all.sh" \
		--no-setup --kernels "stock stock-6.12" --out "$o" "$@" module_load
}

run "$work/s1" --shard 1/2 >"$work/s1.log" 2>&1 || { cat "$work/s1.log"; fail "shard 1/2 failed"; }
run "$work/s2" --shard 2/2 >"$work/s2.log" 2>&1 || { cat "$work/s2.log"; fail "shard 2/2 failed"; }
p1=$(sed -n 's/.*shard 1\/2 of the check tier: //p' "$work/s1.log")
p2=$(sed -n 's/.*shard 2\/2 of the check tier: //p' "$work/s2.log")
echo "shard 1/2: $p1; shard 2/2: $p2"
[ "$(echo $p1 $p2 | tr ' ' '\n' | sort | tr '\n' ' ')" = "host stock stock-6.12 " ] ||
	fail "the shards' parts ($p1 / $p2) are not the tier's parts, each once"
[ "$(wc -l <"$work/boots")" = 2 ] || fail "$(wc -l <"$work/boots") guests booted for two kernels"

out=$("$TOP/tools/testing/run-all.sh" --merge "$work/s1" "$work/s2" 2>&1) ||
	{ echo "$out"; fail "merging the two shards failed"; }
last=$(echo "$out" | tail -n1)
[ "$last" = "5 passed, 0 failed, 0 skipped" ] ||
	{ echo "$out"; fail "merged summary: '$last'"; }
echo "merged: $last"

out=$("$TOP/tools/testing/run-all.sh" --merge "$work/s1" 2>&1) &&
	fail "a merge with shard 2/2 missing passed: $out"
echo "$out" | grep -q "shard 2/2 is missing" || fail "missing shard: $out"
echo "one shard of two: refused ($out)"
cp -a "$work/s2" "$work/s2-other"
echo 0123456789abcdef0123456789abcdef01234567 >"$work/s2-other/ledger/commit"
out=$("$TOP/tools/testing/run-all.sh" --merge "$work/s1" "$work/s2-other" 2>&1) &&
	fail "a merge of shards of two commits passed: $out"
echo "$out" | grep -q "shards of different commits" || fail "two commits: $out"
echo "shards of two commits: refused"

# an interrupted shard: stock-6.12 never finished
: >"$work/boots"
run "$work/all" >"$work/all.log" 2>&1 || { cat "$work/all.log"; fail "the whole tier failed"; }
grep -vx 'stock-6.12' "$work/all/ledger/parts-done" >"$work/done" && mv "$work/done" "$work/all/ledger/parts-done"
: >"$work/boots"
run "$work/all" --resume >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "--resume failed"; }
[ "$(wc -l <"$work/boots")" = 1 ] || fail "--resume booted $(wc -l <"$work/boots") guests, not the one part left"
grep -q 'guest stock-6.12' "$work/resume.log" || fail "--resume did not run stock-6.12"
grep -q 'guest stock:' "$work/resume.log" && fail "--resume ran stock again"
[ "$(tail -n1 "$work/resume.log")" = "5 passed, 0 failed, 0 skipped" ] ||
	{ cat "$work/resume.log"; fail "--resume's summary is not the whole tier's"; }
echo "--resume: ran stock-6.12 only, summary $(tail -n1 "$work/resume.log")"
exit 0
