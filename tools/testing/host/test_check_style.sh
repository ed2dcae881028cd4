#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch --strict, sparse and W=1 are clean.
. "$(dirname "$0")/lib.sh"
make -C "$TOP" check-style
