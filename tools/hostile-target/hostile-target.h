/* SPDX-License-Identifier: GPL-2.0 */
/* hostile-target: what its RDMA modes and its NVMe/TCP alias mode share. */
#ifndef HOSTILE_TARGET_H
#define HOSTILE_TARGET_H

#include <stdint.h>

void say(const char *fmt, ...);
uint16_t get16(const uint8_t *p);
uint32_t get32(const uint8_t *p);
uint64_t get64(const uint8_t *p);
void put16(uint8_t *p, uint16_t v);
void put32(uint8_t *p, uint32_t v);
void put64(uint8_t *p, uint64_t v);

/* -m alias (alias-tcp.c): returns the exit status */
int alias_main(const char *addr, const char *port, const char *subnqn,
	       const char *uuid, const char *nguid, int mib);

#endif
