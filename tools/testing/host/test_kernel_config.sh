#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# build-kernel.sh's check that every option the config fragments ask for
# survived Kconfig (nrp_config_unmet): a wish Kconfig dropped fails the
# build before it starts, and an option asked off that Kconfig left out
# because its dependencies are gone (the debug kernel's ACPI options) is
# off, not a failure. A fragment and a .config as allnoconfig leaves them.
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/fragment" <<'END'
# a comment, and a line of no interest
CONFIG_A=y
CONFIG_B=m
# CONFIG_C is not set
CONFIG_D=y
CONFIG_F=256
CONFIG_S="x y"
# the later fragment wins
# CONFIG_D is not set
# asked off, gone with its dependencies
# CONFIG_PNPACPI is not set
END
cat >"$work/config" <<'END'
CONFIG_A=y
CONFIG_B=m
# CONFIG_C is not set
# CONFIG_D is not set
CONFIG_F=256
CONFIG_S="x y"
CONFIG_AB=y
END
out=$(nrp_config_unmet "$work/fragment" "$work/config") ||
	fail "a .config that has every wish is reported: $out"
[ -z "$out" ] || fail "nothing unmet, yet it printed: $out"
echo "every wish kept: nothing reported"

# each wish Kconfig did not keep, alone: reported, with what .config has
check() { # LINE WANT-OUTPUT
	cp "$work/fragment" "$work/f2"
	echo "$1" >>"$work/f2"
	if out=$(nrp_config_unmet "$work/f2" "$work/config"); then
		fail "'$1' is not reported"
	fi
	[ "$out" = "$2" ] || fail "'$1': got \"$out\", want \"$2\""
	echo "reported: $out"
}
check "CONFIG_PNPACPI=y" "wanted 'CONFIG_PNPACPI=y', got 'CONFIG_PNPACPI absent'"
check "# CONFIG_A is not set" "wanted '# CONFIG_A is not set', got 'CONFIG_A=y'"
check "CONFIG_B=y" "wanted 'CONFIG_B=y', got 'CONFIG_B=m'"
check "CONFIG_F=128" "wanted 'CONFIG_F=128', got 'CONFIG_F=256'"
# a value that is the start of the one .config has is another value
check "CONFIG_F=25" "wanted 'CONFIG_F=25', got 'CONFIG_F=256'"
check "CONFIG_C=y" "wanted 'CONFIG_C=y', got '# CONFIG_C is not set'"
# a symbol that is a prefix of another is not mistaken for it
check "CONFIG_A=m" "wanted 'CONFIG_A=m', got 'CONFIG_A=y'"

# two at once: both
cp "$work/fragment" "$work/f2"
printf 'CONFIG_G=y\nCONFIG_H=y\n' >>"$work/f2"
out=$(nrp_config_unmet "$work/f2" "$work/config") && fail "two unmet wishes pass"
[ "$(echo "$out" | wc -l)" = 2 ] || fail "two unmet wishes, reported: $out"

# no .config (a configuration that made none): an error, not a list
out=$(nrp_config_unmet "$work/fragment" "$work/none" 2>&1) && fail "a missing .config passes"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "a missing .config, reported: $out"

# and build-kernel.sh stops on it, before the build (its message)
grep -q 'nrp_config_unmet "$kdir/fragment.config" "$obj/.config"' "$TOP/tools/vm/build-kernel.sh" ||
	fail "build-kernel.sh does not check its .config with nrp_config_unmet"
echo "PASS: unmet config wishes are reported, each with what Kconfig made of it"
