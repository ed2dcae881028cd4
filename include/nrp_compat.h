/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel differences, in one place. Every decision here rests on a feature
 * probed in the kernel we build against (scripts/compat-probe.sh), never on
 * a version number, so a distribution backport is picked up as it is.
 */
#ifndef NRP_COMPAT_H
#define NRP_COMPAT_H

#include <linux/memremap.h>
#include <linux/pci-p2pdma.h>
#include <rdma/ib_verbs.h>

#include "nrp_probed.h"

#ifndef NRP_HAVE_CTRL_OPS_SUPPORTS_P2PDMA
#error "nvme-rdma-p2p needs nvme_ctrl_ops.supports_pci_p2pdma (Linux 5.11 or later)"
#endif

/*
 * Whether this kernel can hand P2PDMA pages to a block driver at all. On a
 * kernel built without CONFIG_PCI_P2PDMA (Debian's stock kernel) the
 * feature is reported as unavailable and never advertised.
 */
#define nrp_kernel_has_p2pdma() IS_ENABLED(CONFIG_PCI_P2PDMA)

#ifdef NRP_HAVE_IS_PCI_P2PDMA_PAGE
#define nrp_is_p2p_page(page)	is_pci_p2pdma_page(page)
#else
#define nrp_is_p2p_page(page)	false
#endif

#ifdef NRP_HAVE_IB_DMA_PCI_P2P_DMA_SUPPORTED
#define nrp_ib_p2p_capable(ibdev) ib_dma_pci_p2p_dma_supported(ibdev)
#else
#define nrp_ib_p2p_capable(ibdev) false
#endif

/*
 * P2P-aware mapping of a scatterlist for an RDMA device: unlike
 * ib_dma_map_sg() it reports why a mapping failed, -EREMOTEIO meaning the
 * peer memory cannot be reached from the device. The RDMA flavour of
 * dma_map_sgtable() arrived together with ib_dma_pci_p2p_dma_supported(),
 * so that probe stands for both.
 */
#if IS_ENABLED(CONFIG_PCI_P2PDMA) && defined(NRP_HAVE_DMA_MAP_SGTABLE) && \
	defined(NRP_HAVE_IB_DMA_PCI_P2P_DMA_SUPPORTED)
static inline int nrp_ib_map_sgtable(struct ib_device *ibdev,
				     struct sg_table *sgt,
				     enum dma_data_direction dir)
{
	return ib_dma_map_sgtable_attrs(ibdev, sgt, dir, 0);
}

static inline void nrp_ib_unmap_sgtable(struct ib_device *ibdev,
					struct sg_table *sgt,
					enum dma_data_direction dir)
{
	ib_dma_unmap_sgtable_attrs(ibdev, sgt, dir, 0);
}
#else
static inline int nrp_ib_map_sgtable(struct ib_device *ibdev,
				     struct sg_table *sgt,
				     enum dma_data_direction dir)
{
	return -EREMOTEIO;
}

static inline void nrp_ib_unmap_sgtable(struct ib_device *ibdev,
					struct sg_table *sgt,
					enum dma_data_direction dir)
{
}
#endif

#endif /* NRP_COMPAT_H */
