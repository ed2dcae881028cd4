#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's main job: the guest half of "make demo", run exactly as the
# demo runs it (a 256 MiB checkpoint from GPU memory over transport "rdma"
# through the modprobe.d drop-in, verified, 0 bytes from host memory). A
# helper renamed under it fails here, not on a newcomer's machine.
# nrp-timeout: 900
. "$(dirname "$0")/lib_p2p.sh"
# on a kernel without P2PDMA: check that we say so, and skip
nrp_p2p_require
cd "$(dirname "$0")/../../../.." || nrp_fail "no checkout above $0"
exec bash tools/demo-guest.sh 256
