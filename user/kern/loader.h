/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What every BPF loader (proc_watch, sched_watch, icmp_watch, lease_watch)
 * shares: the kernel check, the bpffs and tracefs mounts, the pin directories
 * and pinning, ring buffers, per-CPU sums, and the node and process checks the
 * loaders' callers make. Each message is printed here: callers just pass -errno on. */
#ifndef FL_KERN_LOADER_H
#define FL_KERN_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#define FL_BPFFS    "/sys/fs/bpf"
#define FL_PIN_ROOT FL_BPFFS "/flatline"

struct bpf_map;
struct ring_buffer;

/* Before loading: kernel BTF and BPF ring buffers (fl_check_kernel), bpffs mounted
 * (fl_mount_bpffs), and with tracefs, tracefs too (fl_mount_tracefs). */
int fl_loader_prepare(bool tracefs);
int fl_check_kernel(void);
int fl_mount_bpffs(void);
int fl_mount_tracefs(void);
/* A node's pin directory, FL_PIN_ROOT/<node>. */
void fl_node_pin_dir(char *buf, size_t len, const char *node);
/* Creates dir (under FL_PIN_ROOT) and what is missing above it. */
int fl_make_pin_dir(const char *dir);
/* Pins maps under dir (created if missing), replacing stale pins a killed
 * loader left: the caller holds the node's lock. */
int fl_pin_maps(const char *dir, struct bpf_map **maps, int n);
/* Removes the pins, then dir and FL_PIN_ROOT if nobody else pins there. */
void fl_unpin_maps(const char *dir, struct bpf_map **maps, int n);
/* A ring buffer over map calling fn(ctx, data, size) per record. */
int fl_ring_buffer_new(struct ring_buffer **out, struct bpf_map *map,
		       int (*fn)(void *ctx, void *data, size_t size), void *ctx);
/* A per-CPU array's __u64 slot summed over the possible CPUs (0 on error). */
uint64_t fl_percpu_sum(int map_fd, __u32 key);

int fl_cgroup_id(const char *path, uint64_t *cgid);
int fl_valid_node_id(const char *id);
/* The process exists and some thread of it has not exited (1), else 0. */
int fl_pid_alive(pid_t pid);

#endif
