#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A module built for another kernel is refused at load with a reason that
# names the mismatch, and leaves nothing loaded.
# nrp-timeout: 2400
. "$(dirname "$0")/lib.sh"

# The runner may bring the module while this guest runs (run-guest.sh
# --foreign-ko later: it is built for a guest kernel that was still
# building when this guest booted). Wait for it, or for word that it failed.
if [ "${NRP_FOREIGN_KO:-}" = /nrp-job/foreign.ko ]; then
	for ((i = 0; i < 2300; i += 5)); do
		[ -r "$NRP_FOREIGN_KO" ] && break
		[ -e "$NRP_FOREIGN_KO.failed" ] &&
			nrp_fail "the runner could not build the module for another kernel"
		sleep 5
	done
	[ -r "$NRP_FOREIGN_KO" ] || nrp_fail "no module built for another kernel arrived"
	echo "module for another kernel arrived after $i s"
fi
[ -n "${NRP_FOREIGN_KO:-}" ] && [ -r "$NRP_FOREIGN_KO" ] ||
	nrp_skip "no module built for another kernel in this run"
modprobe nvme-fabrics || nrp_fail "cannot load nvme-fabrics"
nrp_dmesg_mark
out=$(insmod "$NRP_FOREIGN_KO" 2>&1) && nrp_fail "foreign module loaded: $out"
echo "insmod: $out"
nrp_mod_loaded $NRP_MOD && nrp_fail "foreign module left loaded"
# 6.12 checks the size of struct module before the version magic and says
# so: 'this_module section size must match the kernel's built struct
# module size'
why=$(nrp_dmesg_since | grep -E 'version magic|disagrees about version|no symbol version|this_module section size must match' | head -n1)
[ -n "$why" ] || nrp_fail "kernel log does not say why the module was refused"
echo "kernel: $why"
nrp_pass
