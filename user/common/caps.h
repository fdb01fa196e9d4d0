/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Capabilities without libcap: the effective set as a bit mask, its names, and
 * dropping to a smaller set for good (permitted, effective, inheritable, ambient). */
#ifndef FL_CAPS_H
#define FL_CAPS_H

#include <stddef.h>
#include <stdint.h>
#include <linux/capability.h>

#define CAPS_BIT(c) (1ULL << (c))

/* The process's effective and permitted sets; -errno. */
int caps_get(uint64_t *effective, uint64_t *permitted);
/* "cap_bpf,cap_net_admin" (capsh's spelling; "none" for 0) into buf. */
const char *caps_names(uint64_t mask, char *buf, size_t len);
/* Keeps only keep & permitted in the permitted and effective sets, clears the
 * inheritable and ambient sets; what is dropped cannot come back. -errno. */
int caps_keep(uint64_t keep);

#endif
