#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch --strict, sparse and W=1 are clean.
. "$(dirname "$0")/lib.sh"
[ -d "$STOCK_KDIR" ] || skip "linux-headers-$NRP_STOCK_KVER not installed"
make -C "$TOP" check-style
