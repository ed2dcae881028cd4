# SPDX-License-Identifier: GPL-2.0
#
# nvme-rdma-p2p: NVMe over Fabrics RDMA host transport with P2PDMA.
#
#   make [KDIR=/path/to/kernel/build] [KSRC=/path/to/kernel/source]
#   make install          install into /lib/modules/<kernelrelease>/updates
#                         (MODPROBE_CONF=1: and the modprobe.d drop-in)
#   make uninstall        remove both again
#   make sign KEY= CERT=  sign the module (Secure Boot: a key enrolled as MOK)
#   make check-style      checkpatch --strict, sparse, W=1: all must be clean,
#                         for every supported series (scripts/kernel-series.sh
#                         list: 6.1, 6.12, 7.3) unless KDIR names one kernel
#   make check            the test suite in QEMU guests (CI's tier)
#   make check-full       everything: all tests on every kernel and over siw
#                         (SHARD=K/N: a part of it; make check-summary
#                         LEDGERS="..." merges the parts)
#   make demo             boot a guest and write a verified checkpoint
#   make bench            ours against the in-tree transport (tools/bench)
#   make bench-memory     the memory of one controller, ours and in-tree
#   make deb              the Debian package nvme-rdma-p2p-dkms_<version>_all.deb
#                         (debian/, DKMS; tools/make-deb.sh)
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

NRP_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)

KBUILD_ARGS := -C $(KDIR) M=$(TOP) NVME_RDMA_P2P_GEN=$(GEN) \
	NVME_RDMA_P2P_VERSION=$(NRP_VERSION)

.PHONY: all modules gen install install-modprobe-conf uninstall sign clean clean-objs \
	check-style check check-full check-summary demo bench bench-memory htmldocs deb

all: modules

gen:
	@$(TOP)/scripts/private-headers.sh "$(KDIR)" "$(KSRC)" "$(GEN)/priv"
	@$(TOP)/scripts/compat-probe.sh "$(KDIR)" "$(GEN)/priv" \
		"$(GEN)/nrp_probed.h"

modules: gen
	$(MAKE) $(KBUILD_ARGS) modules

# Where "make install" puts things, under INSTALL_MOD_PATH (a staging root
# for packagers and tests; empty for the running system).
MOD_DEST := $(INSTALL_MOD_PATH)/lib/modules/$(KREL)/updates
MODPROBE_CONF_DEST := $(INSTALL_MOD_PATH)/etc/modprobe.d/nvme-rdma-p2p.conf
DEPMOD ?= /sbin/depmod

install: modules
	$(MAKE) $(KBUILD_ARGS) INSTALL_MOD_DIR=updates modules_install
ifeq ($(MODPROBE_CONF),1)
	$(MAKE) -f $(TOP)/Makefile install-modprobe-conf
endif

# The drop-in makes "-t rdma" load this module instead of the in-tree
# nvme-rdma: only when asked for, as it changes what every rdma connect gets.
install-modprobe-conf:
	install -D -m 0644 $(TOP)/tools/modprobe.d/nvme-rdma-p2p.conf \
		$(MODPROBE_CONF_DEST)

uninstall:
	@test -n "$(KREL)" || { echo "nvme-rdma-p2p: no kernel release in KDIR='$(KDIR)'" >&2; exit 1; }
	rm -f $(MOD_DEST)/nvme-rdma-p2p.ko $(MOD_DEST)/nvme-rdma-p2p.ko.*
	rm -f $(MODPROBE_CONF_DEST)
	$(DEPMOD) $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) $(KREL)

# Sign with the kernel's own sign-file and hash, with a key of the admin's
# (enrolled with mokutil --import, see README). The kernel's MODULE_SIG_ALL
# key is not in a headers package, so modules_install leaves this alone.
SIGN_HASH ?= $(or $(shell sed -n 's/^CONFIG_MODULE_SIG_HASH="\(.*\)"/\1/p' \
	$(KDIR)/.config 2>/dev/null),sha256)

sign: modules
	@test -n "$(KEY)" && test -n "$(CERT)" || \
		{ echo "nvme-rdma-p2p: make sign needs KEY=<private key (PEM)> CERT=<certificate (DER or PEM)>" >&2; exit 1; }
	@test -x $(KDIR)/scripts/sign-file || \
		{ echo "nvme-rdma-p2p: $(KDIR)/scripts/sign-file missing (install the kernel's headers)" >&2; exit 1; }
	$(KDIR)/scripts/sign-file $(SIGN_HASH) $(KEY) $(CERT) $(TOP)/nvme-rdma-p2p.ko

# clean-objs keeps .gen/: it is keyed by kernel release and source stamp,
# so it stays valid and spares extracting linux-source again (DKMS).
clean-objs:
	$(if $(wildcard $(KDIR)/Makefile),$(MAKE) $(KBUILD_ARGS) clean)

clean: clean-objs
	rm -rf $(TOP)/.gen

# A series this machine's Debian does not carry (Debian 13's 7.x on a
# Debian 12 host) is checked in the Debian 13 root, where it is native
# (tools/vm/debian-root.sh: made once, as root, from Debian's archive).
ifeq ($(KDIR_GIVEN),)
check-style:
	@for s in $$($(TOP)/scripts/kernel-series.sh list); do \
		run=; \
		$(TOP)/scripts/kernel-series.sh native $$s || \
			run="$(TOP)/tools/vm/debian-root.sh run --"; \
		kd=$$($$run $(TOP)/scripts/kernel-series.sh kdir $$s) || exit 1; \
		echo "== Linux $$s: $$kd$${run:+ (in the Debian 13 root)}"; \
		$$run $(MAKE) --no-print-directory -f $(TOP)/Makefile KDIR=$$kd \
			check-style || exit 1; \
	done
else
check-style: gen
	@$(TOP)/scripts/check-style.sh "$(KDIR)" "$(GEN)"
endif

check:
	@$(TOP)/tools/testing/run-all.sh --tier check

# The full tier, whole or in shards: SHARD=K/N runs the K-th of N parts,
# LEDGER=DIR keeps its results (default check-full/<commit>-<K>of<N>),
# RESUME=1 goes on where a run in that ledger stopped. check-summary
# merges the ledgers of all shards of one commit: LEDGERS="DIR...".
CHECK_FULL_LEDGER = $(or $(LEDGER),$(TOP)/check-full/$(shell git -C $(TOP) rev-parse --short HEAD 2>/dev/null || echo tree)-$(if $(SHARD),$(subst /,of,$(SHARD)),all))
check-full:
	@$(TOP)/tools/testing/run-all.sh --tier full --out $(CHECK_FULL_LEDGER) \
		$(if $(SHARD),--shard $(SHARD)) $(if $(RESUME),--resume)

check-summary:
	@test -n "$(LEDGERS)" || { echo "nvme-rdma-p2p: make check-summary LEDGERS=\"DIR...\" (the shards' ledgers)" >&2; exit 1; }
	@$(TOP)/tools/testing/run-all.sh --merge $(LEDGERS)

demo:
	@$(TOP)/tools/demo.sh

bench:
	@$(TOP)/tools/bench/run.sh

# The memory of one controller, ours against in-tree, at 2 to 240 CPUs.
bench-memory:
	@$(TOP)/tools/bench/memory.sh

deb:
	@$(TOP)/tools/make-deb.sh

# The rst documentation, as the kernel builds its own: warnings are errors.
htmldocs:
	@command -v sphinx-build >/dev/null || { \
		echo "sphinx-build is missing: apt-get install python3-sphinx (tools/setup.sh --no-kernel installs it)" >&2; \
		exit 1; }
	sphinx-build -W --keep-going -q -b html $(TOP)/Documentation \
		$(TOP)/Documentation/output
	@echo "documentation: $(TOP)/Documentation/output/index.html"
