#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make sign KEY= CERT=" (README, Secure Boot) signs the module with the
# kernel's sign-file: with a throwaway key and certificate made by openssl,
# modinfo shows that certificate's subject as signer, its serial as
# sig_key and the kernel's hash as sig_hashalgo, and "make install" keeps
# the signature. Without KEY and CERT it refuses with a reason.
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || fail "openssl missing (tools/setup.sh installs libssl-dev's openssl)"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT

# the same kind of key the README tells admins to make, for one day
openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -sha256 \
	-subj "/CN=nvme-rdma-p2p throwaway test key/" \
	-keyout "$t/mok.priv" -outform DER -out "$t/mok.der" >"$t/openssl.log" 2>&1 ||
	{ cat "$t/openssl.log"; fail "openssl could not make a key"; }
serial=$(openssl x509 -inform DER -in "$t/mok.der" -noout -serial | sed 's/^serial=//')

out=$(make -C "$t" sign 2>&1) && fail "make sign without KEY/CERT succeeded"
echo "$out" | grep -q "make sign needs KEY=" || fail "make sign without KEY/CERT said: $(echo "$out" | tail -n 3)"

make -C "$t" sign KEY="$t/mok.priv" CERT="$t/mok.der" >"$t/sign.log" 2>&1 ||
	{ tail -n 30 "$t/sign.log"; fail "make sign failed"; }
check_sig() { # KO
	local signer key algo
	signer=$(modinfo -F signer "$1")
	key=$(modinfo -F sig_key "$1" | tr -d ':\n')
	algo=$(modinfo -F sig_hashalgo "$1")
	[ "$signer" = "nvme-rdma-p2p throwaway test key" ] || fail "$1: signer '$signer'"
	# modinfo prints the serial as colon-separated bytes: compare as numbers
	[ "$(echo "ibase=16; ${key^^}" | bc)" = "$(echo "ibase=16; ${serial^^}" | bc)" ] ||
		fail "$1: sig_key $key, certificate serial $serial"
	[ "$algo" = sha256 ] || fail "$1: sig_hashalgo '$algo'"
	echo "${1#"$t/"}: signer '$signer', sig_key $key, sig_hashalgo $algo"
}
check_sig "$t/nvme-rdma-p2p.ko"

make -C "$t" install INSTALL_MOD_PATH="$t/root" DEPMOD=true >"$t/install.log" 2>&1 ||
	{ tail -n 30 "$t/install.log"; fail "make install after make sign failed"; }
check_sig "$(find "$t/root" -name nvme-rdma-p2p.ko | head -n1)"
exit 0
