// SPDX-License-Identifier: GPL-2.0
/*
 * hostile-target -m alias: an NVMe/TCP target whose controller reports a
 * subsystem NQN other than the one the host connected to.
 *
 *   hostile-target -m alias -a ADDR [-p PORT] -S SUBNQN -u UUID
 *                  [-g NGUID] [-s MIB]
 *
 * It accepts a fabrics Connect to any NQN, and its Identify Controller
 * names SUBNQN, with the multi-controller bit set (CMIC bit 1): the host's
 * nvme core groups the controller into that subsystem (it looks at
 * Identify's SUBNQN alone; no fabrics code compares it with the connect
 * NQN). Its one namespace reports the identifiers given (UUID, NGUID:
 * those of another target's namespace in SUBNQN, so that the host makes it
 * a path of that namespace's multipath head) and MIB MiB of 512-byte
 * blocks. It reports ANA (one group, optimized), as nvmet does: the host
 * requires it of every controller of a subsystem whose first controller
 * had it. Reads return zeros, writes are taken and dropped: nothing
 * should reach it, and the tests never send it data they read back.
 *
 * NVMe/TCP, not RDMA: the host side of it is the in-tree nvme_tcp, which
 * every P2PDMA guest kernel has, while user-space verbs (which the rest of
 * hostile-target needs) are on the debug kernel only. One thread per TCP
 * connection (the admin queue and each I/O queue); commands are answered
 * in order, an Asynchronous Event Request never. No digests.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile-target.h"

#define PDU_ICREQ	0x0
#define PDU_ICRESP	0x1
#define PDU_H2C_TERM	0x2
#define PDU_CMD		0x4
#define PDU_RSP		0x5
#define PDU_H2C_DATA	0x6
#define PDU_C2H_DATA	0x7
#define PDU_R2T		0x9
#define F_DATA_LAST	0x04

#define IC_LEN		128
#define CMD_HLEN	72		/* common header and the 64-byte SQE */
#define RSP_LEN		24		/* common header and the 16-byte CQE */
#define DATA_HLEN	24
#define INLINE_MAX	8192		/* in-capsule data of an I/O queue */
#define MAX_DATA	0x100000	/* 1 MiB: MDTS 8, 256 pages of 4 KiB */
#define MAXH2C		0x20000		/* 128 KiB */

#define NVME_FABRICS_OP		0x7f
#define NVMF_PROP_SET		0x00
#define NVMF_CONNECT		0x01
#define NVMF_PROP_GET		0x04
#define ADM_GET_LOG		0x02
#define LOG_ANA			0x0c
#define ADM_IDENTIFY		0x06
#define ADM_SET_FEATURES	0x09
#define ADM_GET_FEATURES	0x0a
#define ADM_ASYNC_EVENT		0x0c
#define ADM_KEEP_ALIVE		0x18
#define IO_FLUSH		0x00
#define IO_WRITE		0x01
#define IO_READ			0x02
#define FEAT_NUM_QUEUES		0x07
#define SC_INVALID_OPCODE	0x001
#define SC_INVALID_FIELD	0x002
#define SC_LBA_RANGE		0x080
#define SC_DNR			0x4000

#define ALIAS_CNTLID		0x0a11	/* far from nvmet's first cntlids */

static const char *alias_subnqn;
static uint8_t alias_uuid[16], alias_nguid[16];
static uint64_t alias_blocks;
static uint8_t *zeros;

struct tconn {
	int	fd;
	int	qid;
	uint32_t cc;
	uint8_t	*buf;		/* data of one command, either way */
};

static int parse_hex(const char *s, uint8_t *out, int n)
{
	int i = 0;
	unsigned int v;

	while (*s && i < n) {
		if (*s == '-') {
			s++;
			continue;
		}
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[i++] = v;
		s += 2;
	}
	return i == n && !*s ? 0 : -1;
}

static int read_all(int fd, void *p, size_t len)
{
	uint8_t *b = p;
	ssize_t n;

	while (len) {
		n = read(fd, b, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		b += n;
		len -= n;
	}
	return 0;
}

static int write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	ssize_t n;

	while (len) {
		n = write(fd, b, len);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		b += n;
		len -= n;
	}
	return 0;
}

static void hdr(uint8_t *p, uint8_t type, uint8_t flags, uint8_t hlen,
		uint8_t pdo, uint32_t plen)
{
	p[0] = type;
	p[1] = flags;
	p[2] = hlen;
	p[3] = pdo;
	put32(p + 4, plen);
}

static int send_rsp(struct tconn *c, uint16_t cid, uint16_t sts, uint64_t res)
{
	uint8_t p[RSP_LEN] = { 0 };

	hdr(p, PDU_RSP, 0, RSP_LEN, 0, RSP_LEN);
	put64(p + 8, res);
	put16(p + 18, c->qid);
	put16(p + 20, cid);
	put16(p + 22, sts << 1);
	return write_all(c->fd, p, sizeof(p));
}

/* @len bytes of @data to the host (one C2HData PDU each MAXH2C), then the CQE. */
static int send_data(struct tconn *c, uint16_t cid, const uint8_t *data,
		     uint32_t len)
{
	uint8_t p[DATA_HLEN];
	uint32_t off = 0, n;

	while (off < len) {
		n = len - off < MAXH2C ? len - off : MAXH2C;
		memset(p, 0, sizeof(p));
		hdr(p, PDU_C2H_DATA, off + n == len ? F_DATA_LAST : 0,
		    DATA_HLEN, DATA_HLEN, DATA_HLEN + n);
		put16(p + 8, cid);
		put32(p + 12, off);
		put32(p + 16, n);
		if (write_all(c->fd, p, sizeof(p)) ||
		    write_all(c->fd, data + off, n))
			return -1;
		off += n;
	}
	return send_rsp(c, cid, 0, 0);
}

/* Take @len bytes the host holds for command @cid: R2T, then H2CData PDUs. */
static int take_data(struct tconn *c, uint16_t cid, uint32_t len)
{
	uint8_t p[DATA_HLEN], h[8];
	uint32_t got = 0, n, plen;

	memset(p, 0, sizeof(p));
	hdr(p, PDU_R2T, 0, DATA_HLEN, 0, DATA_HLEN);
	put16(p + 8, cid);
	put16(p + 10, cid);		/* ttag */
	put32(p + 12, 0);
	put32(p + 16, len);
	if (write_all(c->fd, p, sizeof(p)))
		return -1;
	while (got < len) {
		if (read_all(c->fd, h, sizeof(h)) || h[0] != PDU_H2C_DATA ||
		    h[2] != DATA_HLEN || read_all(c->fd, p + 8, DATA_HLEN - 8))
			return -1;
		plen = get32(h + 4);
		n = get32(p + 16);
		if (h[3] < DATA_HLEN || plen != h[3] + n || got + n > len ||
		    (h[3] > DATA_HLEN && read_all(c->fd, c->buf, h[3] - DATA_HLEN)) ||
		    read_all(c->fd, c->buf, n))
			return -1;
		got += n;
	}
	return 0;
}

static void fill_id_ctrl(uint8_t *d)
{
	memset(d, 0, 4096);
	put16(d + 0, 0x1b36);				/* vid */
	memcpy(d + 4, "ALIAS000000000000001", 20);	/* sn */
	memset(d + 24, ' ', 40);
	memcpy(d + 24, "nvme-rdma-p2p hostile-target alias", 34);	/* mn */
	memcpy(d + 64, "1.0     ", 8);			/* fr */
	d[76] = 1 << 1 | 1 << 3;		/* cmic: more than one controller, ANA */
	d[77] = 8;				/* mdts: 1 MiB */
	put16(d + 78, ALIAS_CNTLID);
	put32(d + 80, 0x00010300);		/* ver 1.3 */
	d[111] = 1;				/* cntrltype: I/O */
	d[258] = 3;				/* aerl */
	put16(d + 320, 100);			/* kas: 10 s */
	d[342] = 10;				/* anatt: 10 s */
	d[343] = 0x1f;				/* anacap: every state, changes */
	put32(d + 344, 1);			/* anagrpmax */
	put32(d + 348, 1);			/* nanagrpid */
	d[512] = 0x66;				/* sqes */
	d[513] = 0x44;				/* cqes */
	put16(d + 514, 128);			/* maxcmd */
	put32(d + 516, 1);			/* nn */
	put32(d + 536, 1 << 0 | 1 << 20);	/* sgls: SGLs, offsets */
	put32(d + 540, 1);			/* mnan */
	snprintf((char *)d + 768, 256, "%s", alias_subnqn);
	put32(d + 1792, (64 + INLINE_MAX) / 16);	/* ioccsz */
	put32(d + 1796, 1);			/* iorcsz */
	d[1803] = 1;				/* msdbd */
}

static void fill_id_ns(uint8_t *d)
{
	memset(d, 0, 4096);
	put64(d + 0, alias_blocks);		/* nsze */
	put64(d + 8, alias_blocks);		/* ncap */
	put64(d + 16, alias_blocks);		/* nuse */
	d[30] = 1;				/* nmic: shared */
	put32(d + 92, 1);			/* anagrpid */
	memcpy(d + 104, alias_nguid, 16);	/* nguid */
	d[130] = 9;				/* lbaf 0: 512-byte blocks */
}

static void fill_ns_descs(uint8_t *d)
{
	int off = 0;

	memset(d, 0, 4096);
	d[off] = 3;				/* UUID */
	d[off + 1] = 16;
	memcpy(d + off + 4, alias_uuid, 16);
	off += 20;
	if (memcmp(alias_nguid, zeros, 16)) {
		d[off] = 2;			/* NGUID */
		d[off + 1] = 16;
		memcpy(d + off + 4, alias_nguid, 16);
		off += 20;
	}
	d[off] = 4;				/* CSI: NVM */
	d[off + 1] = 1;
}

static uint64_t prop_get(struct tconn *c, uint32_t off)
{
	switch (off) {
	case 0x00:	/* CAP: MQES 127, CQR, TO 5 s, CSS NVM */
		return 127 | 1ULL << 16 | 10ULL << 24 | 1ULL << 37;
	case 0x08:
		return 0x00010300;
	case 0x14:
		return c->cc;
	case 0x1c:	/* CSTS: RDY follows EN, shutdown completes at once */
		return (c->cc & 1) | ((c->cc >> 14) & 3 ? 2 << 2 : 0);
	default:
		return 0;
	}
}

static int admin_cmd(struct tconn *c, const uint8_t *cmd, uint16_t cid,
		     uint32_t dlen)
{
	uint32_t nsid = get32(cmd + 4);

	switch (cmd[0]) {
	case ADM_IDENTIFY:
		switch (cmd[40]) {
		case 0x00:	/* namespace */
			if (nsid == 1)
				fill_id_ns(c->buf);
			else
				memset(c->buf, 0, 4096);
			break;
		case 0x01:
			fill_id_ctrl(c->buf);
			break;
		case 0x02:	/* active namespaces after nsid */
			memset(c->buf, 0, 4096);
			if (nsid < 1)
				put32(c->buf, 1);
			break;
		case 0x03:
			if (nsid != 1)
				return send_rsp(c, cid, 0x00b | SC_DNR, 0);
			fill_ns_descs(c->buf);
			break;
		default:
			memset(c->buf, 0, 4096);
			break;
		}
		return send_data(c, cid, c->buf, dlen < 4096 ? dlen : 4096);
	case ADM_GET_LOG:
		memset(c->buf, 0, 4096);
		if (cmd[40] == LOG_ANA) {
			/* one group, 1, optimized, with namespace 1 */
			put16(c->buf + 8, 1);		/* ngrps */
			put32(c->buf + 16, 1);		/* grpid */
			put32(c->buf + 20, 1);		/* nnsids */
			c->buf[32] = 0x01;		/* state: optimized */
			put32(c->buf + 48, 1);		/* nsid */
		}
		if (dlen <= 4096)
			return send_data(c, cid, c->buf, dlen);
		return send_data(c, cid, zeros, dlen);
	case ADM_SET_FEATURES:
		/* one I/O queue of each kind, whatever was asked for */
		return send_rsp(c, cid, 0, 0);
	case ADM_GET_FEATURES:
		return send_rsp(c, cid, 0, 0);
	case ADM_KEEP_ALIVE:
		return send_rsp(c, cid, 0, 0);
	case ADM_ASYNC_EVENT:
		return 0;			/* there never is an event */
	default:
		return send_rsp(c, cid, SC_INVALID_OPCODE | SC_DNR, 0);
	}
}

static int io_cmd(struct tconn *c, const uint8_t *cmd, uint16_t cid,
		  uint32_t dlen)
{
	uint64_t slba = get64(cmd + 40);
	uint32_t nlb = (get32(cmd + 48) & 0xffff) + 1;

	switch (cmd[0]) {
	case IO_FLUSH:
		return send_rsp(c, cid, 0, 0);
	case IO_READ:
	case IO_WRITE:
		if (get32(cmd + 4) != 1 || slba + nlb > alias_blocks ||
		    nlb * 512ULL > MAX_DATA || dlen != nlb * 512)
			return send_rsp(c, cid, SC_LBA_RANGE | SC_DNR, 0);
		if (cmd[0] == IO_READ)
			return send_data(c, cid, zeros, dlen);
		return send_rsp(c, cid, 0, 0);	/* the data was taken */
	default:
		return send_rsp(c, cid, SC_INVALID_OPCODE | SC_DNR, 0);
	}
}

static int fabrics_cmd(struct tconn *c, const uint8_t *cmd, uint16_t cid,
		       const uint8_t *data, uint32_t dlen)
{
	switch (cmd[4]) {
	case NVMF_CONNECT:
		if (dlen < 1024)
			return send_rsp(c, cid, SC_INVALID_FIELD | SC_DNR, 0);
		c->qid = get16(cmd + 42);
		say("alias: connect qid %d to %.223s, answering as %s", c->qid,
		    (const char *)data + 256, alias_subnqn);
		return send_rsp(c, cid, 0, c->qid ? 0 : ALIAS_CNTLID);
	case NVMF_PROP_SET:
		if (get32(cmd + 44) == 0x14)
			c->cc = get64(cmd + 48);
		return send_rsp(c, cid, 0, 0);
	case NVMF_PROP_GET:
		return send_rsp(c, cid, 0, prop_get(c, get32(cmd + 44)));
	default:
		return send_rsp(c, cid, SC_INVALID_OPCODE | SC_DNR, 0);
	}
}

/* One command capsule: its in-capsule data follows the SQE. */
static int handle_capsule(struct tconn *c, const uint8_t *h, const uint8_t *cmd)
{
	uint32_t plen = get32(h + 4), inl = 0, dlen = get32(cmd + 32);
	uint8_t opc = cmd[0] == NVME_FABRICS_OP ? cmd[4] : cmd[0];
	uint16_t cid = get16(cmd + 2);

	if (plen > CMD_HLEN) {
		/* pdo may leave a pad behind the header */
		if (h[3] < CMD_HLEN || plen - h[3] > INLINE_MAX ||
		    read_all(c->fd, c->buf, h[3] - CMD_HLEN) ||
		    read_all(c->fd, c->buf, plen - h[3]))
			return -1;
		inl = plen - h[3];
	}
	if (dlen > MAX_DATA)
		return send_rsp(c, cid, SC_INVALID_FIELD | SC_DNR, 0);
	/* host to controller: in the capsule, or asked for with R2T */
	if ((opc & 3) == 1 && dlen > inl && take_data(c, cid, dlen))
		return -1;
	if (cmd[0] == NVME_FABRICS_OP)
		return fabrics_cmd(c, cmd, cid, c->buf, dlen);
	if (!c->qid)
		return admin_cmd(c, cmd, cid, dlen);
	return io_cmd(c, cmd, cid, dlen);
}

static void *conn_thread(void *arg)
{
	struct tconn *c = arg;
	uint8_t ic[IC_LEN], h[8], cmd[64];

	if (read_all(c->fd, ic, sizeof(ic)) || ic[0] != PDU_ICREQ) {
		say("alias: no ICReq");
		goto out;
	}
	memset(ic, 0, sizeof(ic));
	hdr(ic, PDU_ICRESP, 0, IC_LEN, 0, IC_LEN);
	put32(ic + 12, MAXH2C);			/* maxdata */
	if (write_all(c->fd, ic, sizeof(ic)))
		goto out;
	for (;;) {
		if (read_all(c->fd, h, sizeof(h)))
			break;
		if (h[0] == PDU_H2C_TERM) {
			say("alias: the host terminated the connection");
			break;
		}
		if (h[0] != PDU_CMD || h[2] != CMD_HLEN) {
			say("alias: unexpected PDU type %u hlen %u", h[0], h[2]);
			break;
		}
		if (read_all(c->fd, cmd, sizeof(cmd)) ||
		    handle_capsule(c, h, cmd))
			break;
	}
out:
	close(c->fd);
	free(c->buf);
	free(c);
	return NULL;
}

int alias_main(const char *addr, const char *port, const char *subnqn,
	       const char *uuid, const char *nguid, int mib)
{
	struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_PASSIVE,
		.ai_socktype = SOCK_STREAM,
	}, *ai;
	int lfd, one = 1;
	pthread_t t;

	if (!subnqn || !uuid || parse_hex(uuid, alias_uuid, 16) ||
	    (nguid && parse_hex(nguid, alias_nguid, 16)) || mib <= 0) {
		fprintf(stderr,
			"alias: needs -S SUBNQN, -u UUID (hex), [-g NGUID (hex)], -s MIB > 0\n");
		return 2;
	}
	alias_subnqn = subnqn;
	alias_blocks = (uint64_t)mib << 11;
	zeros = calloc(1, MAX_DATA);
	if (!zeros)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "bad address %s port %s\n", addr, port);
		return 2;
	}
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 16)) {
		perror("alias: listen");
		return 1;
	}
	freeaddrinfo(ai);
	say("ready: mode alias on %s:%s (NVMe/TCP), reporting subsystem %s", addr,
	    port, subnqn);
	for (;;) {
		struct tconn *c = calloc(1, sizeof(*c));
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0 || !c) {
			free(c);
			if (fd >= 0)
				close(fd);
			if (errno == EINTR)
				break;
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c->fd = fd;
		c->buf = malloc(MAX_DATA);
		if (!c->buf || pthread_create(&t, NULL, conn_thread, c)) {
			close(fd);
			free(c->buf);
			free(c);
			continue;
		}
		pthread_detach(t);
	}
	close(lfd);
	say("done");
	return 0;
}
