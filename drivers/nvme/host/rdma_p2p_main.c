// SPDX-License-Identifier: GPL-2.0
/*
 * nvme-rdma-p2p: NVMe over Fabrics host transport over RDMA with PCI
 * peer-to-peer DMA. Module glue: parameters, registration with
 * nvme-fabrics and with the RDMA core.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/string.h>

#include "nrp.h"

/*
 * nvme-fabrics picks the first registered transport whose name matches the
 * connect string. Registering under another name lets this module run next
 * to the in-tree nvme_rdma for side-by-side tests.
 */
static char *transport = "rdma";
module_param(transport, charp, 0444);
MODULE_PARM_DESC(transport, "transport name to register with nvme-fabrics (default: rdma)");

/*
 * Registering memory for every I/O costs a REG_MR and an invalidation
 * per command. Turning this off describes single-segment I/O with the
 * PD's global rkey instead, which is faster but lets the target read and
 * write all of this host's memory. Same meaning and default as nvme_rdma.
 */
bool nrp_register_always = true;
module_param_named(register_always, nrp_register_always, bool, 0444);
MODULE_PARM_DESC(register_always,
		 "use memory registration even for contiguous memory regions (default: Y)");

/*
 * Soft RDMA devices (rxe, siw) copy data with the CPU through kernel
 * virtual addresses, so they can carry P2PDMA memory without any PCI
 * topology support. That is useful to develop and test the P2P path in a
 * VM, and pointless (slow, CPU reads of device BARs) in production, so
 * it is opt-in.
 */
bool nrp_allow_soft_p2p;
/*
 * Writable: a controller reads it when it associates (connect, reset,
 * reconnect), and its paths and heads follow what it decides then.
 */
module_param_named(allow_soft_p2p, nrp_allow_soft_p2p, bool, 0644);
MODULE_PARM_DESC(allow_soft_p2p,
		 "advertise P2PDMA support over soft RDMA devices (rxe, siw), read at each controller's next connect or reset; test/development only (default: N)");

/*
 * Entries of the page list of every pool MR, one of them for a buffer
 * that does not start on a page boundary; so commands of up to
 * max_mr_pages - 1 pages. Read when a controller is created.
 */
unsigned int nrp_max_mr_pages = NRP_MR_PAGES_DEFAULT;

static int nrp_set_max_mr_pages(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 2, NRP_FR_PAGES_CEILING);
}

static const struct kernel_param_ops nrp_max_mr_pages_ops = {
	.set	= nrp_set_max_mr_pages,
	.get	= param_get_uint,
};

module_param_cb(max_mr_pages, &nrp_max_mr_pages_ops, &nrp_max_mr_pages, 0644);
MODULE_PARM_DESC(max_mr_pages,
		 "page-list entries of each MR, 2 to 2048; bounds one command to this less one 4 KiB page (default: 256, as nvme_rdma)");

/* ib_unregister_client() also "removes" every device from our view */
static bool nrp_unloading;

static struct nvmf_transport_ops nrp_transport = {
	.module		= THIS_MODULE,
	.required_opts	= NVMF_OPT_TRADDR,
	/*
	 * As nvme_rdma. fast_io_fail_tmo is among the options every
	 * transport gets from nvme-fabrics, so it needs no mention here.
	 */
	.allowed_opts	= NVMF_OPT_TRSVCID | NVMF_OPT_RECONNECT_DELAY |
			  NVMF_OPT_HOST_TRADDR | NVMF_OPT_CTRL_LOSS_TMO |
			  NVMF_OPT_NR_WRITE_QUEUES | NVMF_OPT_NR_POLL_QUEUES |
			  NVMF_OPT_TOS,
	.create_ctrl	= nrp_create_ctrl,
};

/*
 * Called before the rdma_cm learns that the device goes away (clients
 * are removed in reverse order of registration), and the device cannot
 * finish unregistering while our queues hold its resources.
 */
static void nrp_ib_remove_one(struct ib_device *ibdev, void *client_data)
{
	nrp_delete_ctrls_on(ibdev, nrp_unloading ?
			    "the module is unloading" :
			    "the RDMA device is being removed");
}

static struct ib_client nrp_ib_client = {
	.name	= "nvme_rdma_p2p",
	.remove	= nrp_ib_remove_one,
};

/*
 * nvme-fabrics accepts several transports under one name and silently
 * uses the one registered first, so next to the in-tree nvme_rdma
 * (loaded or built in) a transport named "rdma" would never be used.
 * nvme-fabrics offers no lookup; the module's sysfs entry tells.
 */
static bool nrp_in_tree_rdma_present(void)
{
	struct kobject *kobj;

	if (!THIS_MODULE->mkobj.kobj.kset)
		return false;
	kobj = kset_find_obj(THIS_MODULE->mkobj.kobj.kset, "nvme_rdma");
	if (!kobj)
		return false;
	kobject_put(kobj);
	return true;
}

static int __init nrp_init(void)
{
	int ret;

	if (!transport || !*transport) {
		pr_err("the transport parameter must not be empty\n");
		return -EINVAL;
	}

	if (!strcmp(transport, "rdma") && nrp_in_tree_rdma_present()) {
		pr_err("transport 'rdma' is taken by the in-tree nvme_rdma module: unload it first, or load this module with transport=<another name>\n");
		return -EBUSY;
	}

	ret = nrp_mpath_init(nrp_stats_init());
	if (ret)
		goto out_stats_exit;

	ret = ib_register_client(&nrp_ib_client);
	if (ret) {
		pr_err("failed to register with the RDMA core: %d\n", ret);
		goto out_mpath_exit;
	}

	nrp_transport.name = transport;
	nrp_init_ctrl_ops(transport);
	ret = nvmf_register_transport(&nrp_transport);
	if (ret) {
		pr_err("failed to register transport '%s': %d\n",
		       transport, ret);
		goto out_unregister_client;
	}

	pr_info("registered transport '%s'\n", transport);
	return 0;

out_unregister_client:
	ib_unregister_client(&nrp_ib_client);
out_mpath_exit:
	nrp_mpath_exit();
out_stats_exit:
	nrp_stats_exit();
	return ret;
}

static void __exit nrp_exit(void)
{
	/* no new controllers from here on */
	nvmf_unregister_transport(&nrp_transport);
	nrp_unloading = true;
	/* runs nrp_ib_remove_one() for every device */
	ib_unregister_client(&nrp_ib_client);
	/* controllers between two associations have no device */
	nrp_delete_all_ctrls();
	nrp_mpath_exit();
	nrp_stats_exit();
}

module_init(nrp_init);
module_exit(nrp_exit);

MODULE_DESCRIPTION("NVMe over Fabrics RDMA host transport with P2PDMA");
MODULE_LICENSE("GPL");
/* dkms.conf's PACKAGE_VERSION: the Debian package's version in its builds */
MODULE_VERSION(NRP_VERSION);
