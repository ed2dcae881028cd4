# SPDX-License-Identifier: GPL-2.0
#
# nvme-rdma-p2p: NVMe over Fabrics RDMA host transport with P2PDMA.
#
#   make [KDIR=/path/to/kernel/build] [KSRC=/path/to/kernel/source]
#   make install          install into /lib/modules/<kernelrelease>/updates
#   make check-style      checkpatch --strict, sparse, W=1: all must be clean,
#                         for every supported series (scripts/kernel-series.sh
#                         list) unless KDIR names one kernel
#   make check            the test suite in QEMU guests (CI's tier)
#   make check-full       everything: all tests on every kernel and over siw
#   make demo             boot a guest and write a verified checkpoint
#
# KDIR defaults to the running kernel's build tree, else the installed
# headers of Debian's stock 6.1 kernel that match linux-source-6.1, found by
# scripts/kernel-series.sh: the rule tools/setup.sh installs by. The nvme
# host's private headers come from KSRC, else /usr/src/linux-source-X.Y.tar.xz,
# and must be the same version as KDIR.

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# check-style without KDIR checks every supported kernel series in turn.
KDIR_GIVEN := $(KDIR)
ifeq ($(KDIR),)
KDIR := $(wildcard /lib/modules/$(shell uname -r)/build)
endif
ifeq ($(KDIR),)
KDIR := $(shell $(TOP)/scripts/kernel-series.sh kdir 6.1 2>/dev/null)
endif
KSRC ?=

KREL := $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)
GEN := $(TOP)/.gen/$(if $(KREL),$(KREL),unknown)

KBUILD_ARGS := -C $(KDIR) M=$(TOP) NVME_RDMA_P2P_GEN=$(GEN)

.PHONY: all modules gen install clean check-style check check-full demo bench

all: modules

gen:
	@$(TOP)/scripts/private-headers.sh "$(KDIR)" "$(KSRC)" "$(GEN)/priv"
	@$(TOP)/scripts/compat-probe.sh "$(KDIR)" "$(GEN)/priv" \
		"$(GEN)/nrp_probed.h"

modules: gen
	$(MAKE) $(KBUILD_ARGS) modules

install: modules
	$(MAKE) $(KBUILD_ARGS) INSTALL_MOD_DIR=updates modules_install

clean:
	$(if $(wildcard $(KDIR)/Makefile),$(MAKE) $(KBUILD_ARGS) clean)
	rm -rf $(TOP)/.gen

ifeq ($(KDIR_GIVEN),)
check-style:
	@for s in $$($(TOP)/scripts/kernel-series.sh list); do \
		kd=$$($(TOP)/scripts/kernel-series.sh kdir $$s) || exit 1; \
		echo "== Linux $$s: $$kd"; \
		$(MAKE) --no-print-directory -f $(TOP)/Makefile KDIR=$$kd \
			check-style || exit 1; \
	done
else
check-style: gen
	@$(TOP)/scripts/check-style.sh "$(KDIR)" "$(GEN)"
endif

check:
	@$(TOP)/tools/testing/run-all.sh --tier check

check-full:
	@$(TOP)/tools/testing/run-all.sh --tier full

demo:
	@$(TOP)/tools/demo.sh

bench:
	@$(TOP)/tools/bench/run.sh
