// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: NVMe over Fabrics host transport over RDMA with PCI
 * peer-to-peer DMA. Module glue: parameters and registration with
 * nvme-fabrics.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

#include "nvme.h"
#include "fabrics.h"
#include "nrp_compat.h"

/*
 * nvme-fabrics picks the first registered transport whose name matches the
 * connect string. Registering under another name lets this module run next
 * to the in-tree nvme_rdma for side-by-side tests.
 */
static char *transport = "rdma";
module_param(transport, charp, 0444);
MODULE_PARM_DESC(transport, "transport name to register with nvme-fabrics (default: rdma)");

static struct nvme_ctrl *nrp_create_ctrl(struct device *dev,
					 struct nvmf_ctrl_options *opts)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static struct nvmf_transport_ops nrp_transport = {
	.module		= THIS_MODULE,
	.create_ctrl	= nrp_create_ctrl,
};

static int __init nrp_init(void)
{
	nrp_transport.name = transport;
	nvmf_register_transport(&nrp_transport);
	pr_info("registered transport '%s'\n", transport);
	return 0;
}

static void __exit nrp_exit(void)
{
	nvmf_unregister_transport(&nrp_transport);
}

module_init(nrp_init);
module_exit(nrp_exit);

MODULE_DESCRIPTION("NVMe over Fabrics RDMA host transport with P2PDMA");
MODULE_LICENSE("GPL");
