/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The runtime settings (ctl_runtime.c) as Sentinel's commands over them
 * (ctl_runtime_cmd.c) see them: the table of settings, checking, applying and
 * keeping a value. Private to those two files. */
#ifndef FL_CTL_RUNTIME_H
#define FL_CTL_RUNTIME_H

#include <stddef.h>

struct ctl;

/* A setting: its Sentinel name, where it lives, and its bounds. SET ones are per
 * master (shard), as Sentinel's; DEBUG and CONFIG ones are the controller's. */
enum rt_kind { RT_INT, RT_STR, RT_SECRET };
enum rt_scope { RT_MASTER, RT_DEBUG, RT_CONFIG };
struct rt_key {
	const char *name;
	enum rt_kind kind;
	int min, max;
	enum rt_scope scope;
};

#define CTL_RT_NKEYS 17
#define RT_VAL_MAX   256
extern const struct rt_key ctl_rt_keys[CTL_RT_NKEYS];

/* The setting's index, -1 if none. */
int ctl_rt_key(const char *name);
/* Checks one value of setting i; -EINVAL with why. */
int ctl_rt_check(int i, const char *v, long long *num, char *why, size_t whylen);
/* Checks and applies one value: a SET key to shard (-1: every shard), the others to
 * the controller. -EINVAL with why. */
int ctl_rt_apply(struct ctl *c, int shard, int i, const char *v, char *why, size_t whylen);
/* The value in effect, as text (shard: for a SET key). */
void ctl_rt_current(struct ctl *c, int shard, int i, char *buf, size_t len);
/* Writes every runtime value to <state_file>.runtime: write (0600), fsync, rename,
 * fsync of the directory. */
int ctl_rt_flush(struct ctl *c, char *why, size_t whylen);
/* HA mode: <prefix>rel = val in etcd, from any controller (runtime settings: not the
 * shard state). fn gets 0 or -errno and why; returns 0 or -errno (fn then never runs). */
int ctl_rt_put_plain(struct ctl *c, const char *rel, const char *val,
		     void (*fn)(void *ctx, int err, const char *msg), void *ctx);

#endif
