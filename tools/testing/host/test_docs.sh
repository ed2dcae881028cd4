#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# "make htmldocs" (README) builds Documentation/ with Sphinx, warnings as
# errors, and the pages it promises exist; a broken cross-reference or a
# malformed table fails here, not on a reader's screen.
. "$(dirname "$0")/lib.sh"
command -v sphinx-build >/dev/null || fail "sphinx-build missing: the set-up installs python3-sphinx"
t=$(scratch_tree)
trap 'rm -rf "$t"' EXIT
make -C "$t" htmldocs >"$t/docs.log" 2>&1 || { cat "$t/docs.log"; fail "make htmldocs failed"; }
for page in index admin-guide design testing; do
	[ -s "$t/Documentation/output/$page.html" ] || fail "no $page.html"
done
# every section the admin guide promises newcomers
for h in Install Connecting "P2PDMA set-up" "Counters and limits" "Checking a host: nrp-check" Troubleshooting; do
	grep -q ">$h<" "$t/Documentation/output/admin-guide.html" || fail "admin guide lacks '$h'"
done
echo "built: $(ls "$t/Documentation/output"/*.html | wc -l) pages"
exit 0
