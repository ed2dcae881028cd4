// SPDX-License-Identifier: GPL-2.0
/*
 * nrp_p2pdist: what the kernel's PCI P2PDMA core decides for a pair of PCI
 * devices, asked through debugfs, so that the topology verdicts of
 * tools/nrp-check are tested against the kernel, not against themselves.
 *
 *   echo "0000:03:00.0 0000:04:00.0" >/sys/kernel/debug/nrp_p2pdist/query
 *   cat /sys/kernel/debug/nrp_p2pdist/query
 *   provider 0000:03:00.0 client 0000:04:00.0 distance 4 map bus_address
 *
 * distance is pci_p2pdma_distance_many() with the second device as the one
 * client: -1 when the kernel refuses the pair (always, without P2PDMA).
 *
 * map is what the DMA API does when one page of the provider's P2PDMA
 * pool is mapped for the client, the step every P2P transfer of an RDMA
 * device goes through: bus_address (the segment carries the peer's PCI
 * bus address), host_bridge (mapped as ordinary memory, the traffic
 * crosses the host bridge), refused (-EREMOTEIO), or unknown:<why> when it
 * could not be tried: no P2PDMA in this kernel, no free page in the
 * provider's pool, or a client whose DMA mask is narrower than 64 bits
 * (mapping the page as ordinary memory might then bounce or warn).
 *
 * Nothing is transferred: the page is mapped, looked at, unmapped and
 * given back at once.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pci-p2pdma.h>
#include <linux/scatterlist.h>
#include <linux/uaccess.h>

static struct dentry *nrp_p2pdist_dir;

/* The answer to the last query; serialises queries too. */
static DEFINE_MUTEX(nrp_p2pdist_lock);
static char nrp_p2pdist_answer[160];

#ifdef CONFIG_PCI_P2PDMA
static void nrp_p2pdist_map(struct pci_dev *provider, struct pci_dev *client,
			    char *buf, size_t len)
{
	struct scatterlist sg;
	struct sg_table sgt = { .sgl = &sg, .orig_nents = 1 };
	bool bus;
	void *page;
	int ret;

	if (dma_get_mask(&client->dev) != DMA_BIT_MASK(64)) {
		scnprintf(buf, len, "unknown:dma_mask");
		return;
	}
	page = pci_alloc_p2pmem(provider, PAGE_SIZE);
	if (!page) {
		scnprintf(buf, len, "unknown:no_free_p2pmem");
		return;
	}
	sg_init_table(&sg, 1);
	sg_set_page(&sg, virt_to_page(page), PAGE_SIZE, offset_in_page(page));
	ret = dma_map_sgtable(&client->dev, &sgt, DMA_TO_DEVICE,
			      DMA_ATTR_SKIP_CPU_SYNC);
	if (ret == -EREMOTEIO) {
		scnprintf(buf, len, "refused");
	} else if (ret) {
		scnprintf(buf, len, "unknown:error%d", ret);
	} else {
		/* read before the unmap, which clears the mark */
		bus = sg.dma_flags & SG_DMA_BUS_ADDRESS;
		dma_unmap_sgtable(&client->dev, &sgt, DMA_TO_DEVICE,
				  DMA_ATTR_SKIP_CPU_SYNC);
		scnprintf(buf, len, bus ? "bus_address" : "host_bridge");
	}
	pci_free_p2pmem(provider, page, PAGE_SIZE);
}
#else
static void nrp_p2pdist_map(struct pci_dev *provider, struct pci_dev *client,
			    char *buf, size_t len)
{
	scnprintf(buf, len, "unknown:no_p2pdma");
}
#endif

static struct pci_dev *nrp_p2pdist_get(unsigned int dom, unsigned int bus,
				       unsigned int dev, unsigned int fn)
{
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return NULL;
	return pci_get_domain_bus_and_slot(dom, bus, PCI_DEVFN(dev, fn));
}

static ssize_t nrp_p2pdist_write(struct file *file, const char __user *ubuf,
				 size_t count, loff_t *ppos)
{
	unsigned int d[2], b[2], s[2], f[2];
	struct pci_dev *provider, *client = NULL;
	struct device *clients[1];
	char map[32], in[64];
	int dist, ret;

	if (count >= sizeof(in))
		return -EINVAL;
	if (copy_from_user(in, ubuf, count))
		return -EFAULT;
	in[count] = '\0';
	if (sscanf(strim(in), "%x:%x:%x.%x %x:%x:%x.%x", &d[0], &b[0], &s[0],
		   &f[0], &d[1], &b[1], &s[1], &f[1]) != 8)
		return -EINVAL;
	provider = nrp_p2pdist_get(d[0], b[0], s[0], f[0]);
	if (provider)
		client = nrp_p2pdist_get(d[1], b[1], s[1], f[1]);
	if (!client) {
		ret = -ENODEV;
		goto out;
	}

	mutex_lock(&nrp_p2pdist_lock);
	clients[0] = &client->dev;
	dist = pci_p2pdma_distance_many(provider, clients, 1, false);
	nrp_p2pdist_map(provider, client, map, sizeof(map));
	scnprintf(nrp_p2pdist_answer, sizeof(nrp_p2pdist_answer),
		  "provider %s client %s distance %d map %s\n",
		  pci_name(provider), pci_name(client), dist, map);
	mutex_unlock(&nrp_p2pdist_lock);
	ret = count;
out:
	pci_dev_put(client);
	pci_dev_put(provider);
	return ret;
}

static ssize_t nrp_p2pdist_read(struct file *file, char __user *ubuf,
				size_t count, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&nrp_p2pdist_lock);
	ret = simple_read_from_buffer(ubuf, count, ppos, nrp_p2pdist_answer,
				      strlen(nrp_p2pdist_answer));
	mutex_unlock(&nrp_p2pdist_lock);
	return ret;
}

static const struct file_operations nrp_p2pdist_fops = {
	.owner	= THIS_MODULE,
	.open	= simple_open,
	.read	= nrp_p2pdist_read,
	.write	= nrp_p2pdist_write,
	.llseek	= default_llseek,
};

static int __init nrp_p2pdist_init(void)
{
	nrp_p2pdist_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	if (IS_ERR(nrp_p2pdist_dir))
		return PTR_ERR(nrp_p2pdist_dir);
	debugfs_create_file("query", 0600, nrp_p2pdist_dir, NULL,
			    &nrp_p2pdist_fops);
	return 0;
}

static void __exit nrp_p2pdist_exit(void)
{
	debugfs_remove_recursive(nrp_p2pdist_dir);
}

module_init(nrp_p2pdist_init);
module_exit(nrp_p2pdist_exit);
MODULE_DESCRIPTION("Test fixture: the kernel's P2PDMA decision for a pair of PCI devices");
MODULE_LICENSE("GPL");
