// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/log.h"
#include "kern/proc_watch.h"
#include "proc.skel.h"

struct proc_watch {
	struct fl_proc *skel;
	struct ring_buffer *rb;
	proc_watch_event_fn cb;
	void *ctx;
	char pin_dir[128]; /* FL_PIN_ROOT/<node>: node ids are at most 64 bytes */
};

/* The maps a person inspects with `bpftool map dump pinned …`. */
#define PROC_WATCH_NPINS 3
static void pinned_maps(struct fl_proc *skel, struct bpf_map **maps)
{
	maps[0] = skel->maps.fl_watch_pids;
	maps[1] = skel->maps.fl_watch_cgrps;
	maps[2] = skel->maps.fl_drops;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct proc_watch *pw = ctx;

	if (size < sizeof(struct fl_proc_event))
		return 0;
	pw->cb(pw->ctx, data);
	return 0;
}

int proc_watch_open(struct proc_watch **out, const struct proc_watch_opts *opts)
{
	struct bpf_map *maps[PROC_WATCH_NPINS];
	struct proc_watch *pw;
	int err;

	err = fl_loader_prepare(true);
	if (err)
		return err;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->cb = opts->cb;
	pw->ctx = opts->ctx;
	fl_node_pin_dir(pw->pin_dir, sizeof(pw->pin_dir), opts->node);

	pw->skel = fl_proc__open();
	if (!pw->skel) {
		err = -errno;
		pr_warn("failed to open BPF object fl_proc: %s\n", strerror(errno));
		goto cleanup;
	}
	pw->skel->rodata->targ_cgroups = opts->cgroups;
	err = fl_proc__load(pw->skel);
	if (err) {
		pr_warn("failed to load BPF programs: %s (run with -v for the verifier's log)\n",
			strerror(-err));
		goto cleanup;
	}
	err = fl_proc__attach(pw->skel);
	if (err) {
		pr_warn("failed to attach BPF programs: %s\n", strerror(-err));
		goto cleanup;
	}
	pinned_maps(pw->skel, maps);
	err = fl_pin_maps(pw->pin_dir, maps, PROC_WATCH_NPINS);
	if (err)
		goto cleanup;
	err = fl_ring_buffer_new(&pw->rb, pw->skel->maps.fl_events, handle_event, pw);
	if (err)
		goto cleanup;
	*out = pw;
	return 0;
cleanup:
	proc_watch_close(pw);
	return err;
}

int proc_watch_watch_pid(struct proc_watch *pw, pid_t pid, __u32 how)
{
	__u32 key = pid;

	if (bpf_map_update_elem(bpf_map__fd(pw->skel->maps.fl_watch_pids), &key, &how, BPF_ANY))
		return -errno;
	return 0;
}

int proc_watch_unwatch_pid(struct proc_watch *pw, pid_t pid)
{
	__u32 key = pid;

	if (bpf_map_delete_elem(bpf_map__fd(pw->skel->maps.fl_watch_pids), &key) && errno != ENOENT)
		return -errno;
	return 0;
}

/* The cgroup's level in the v2 hierarchy: how many directories above it are
 * still on the cgroup2 mount (the root is level 0). */
static int cgroup_level(const char *path)
{
	char buf[PATH_MAX], *slash;
	struct statfs st;
	int level = 0;

	if (!realpath(path, buf))
		return -errno;
	while ((slash = strrchr(buf, '/')) && slash != buf) {
		*slash = '\0';
		if (statfs(buf, &st) || st.f_type != CGROUP2_SUPER_MAGIC)
			break;
		level++;
	}
	return level;
}

int proc_watch_watch_cgroup(struct proc_watch *pw, const char *path, uint64_t *cgid)
{
	__u32 one = 1;
	int err, level;

	if (!pw->skel->rodata->targ_cgroups)
		return -EINVAL; /* loaded without the cgroup filter */
	err = fl_cgroup_id(path, cgid);
	if (err)
		return err;
	level = cgroup_level(path);
	if (level < 0)
		return level;
	if (level >= FL_MAX_CGROUP_DEPTH)
		return -E2BIG;
	if (bpf_map_update_elem(bpf_map__fd(pw->skel->maps.fl_watch_cgrps), cgid, &one, BPF_ANY))
		return -errno;
	/* Written through the skeleton's mmap of .bss: the programs see it at once. */
	__atomic_or_fetch(&pw->skel->bss->cgroup_levels, 1u << level, __ATOMIC_SEQ_CST);
	return 0;
}

int proc_watch_epoll_fd(const struct proc_watch *pw)
{
	return ring_buffer__epoll_fd(pw->rb);
}

int proc_watch_consume(struct proc_watch *pw)
{
	return ring_buffer__consume(pw->rb);
}

uint64_t proc_watch_drops(const struct proc_watch *pw)
{
	return fl_percpu_sum(bpf_map__fd(pw->skel->maps.fl_drops), 0);
}

const char *proc_watch_pin_dir(const struct proc_watch *pw)
{
	return pw->pin_dir;
}

void proc_watch_close(struct proc_watch *pw)
{
	if (!pw)
		return;
	ring_buffer__free(pw->rb);
	if (pw->skel) {
		struct bpf_map *maps[PROC_WATCH_NPINS];

		pinned_maps(pw->skel, maps);
		fl_unpin_maps(pw->pin_dir, maps, PROC_WATCH_NPINS);
	}
	fl_proc__destroy(pw->skel);
	free(pw);
}
