// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What every BPF loader (proc_watch, sched_watch, icmp_watch, lease_watch)
 * shares: see loader.h. */
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
#include "kern/loader.h"

int fl_valid_node_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 64 || id[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		/* No '.': bpffs refuses it in names (EPERM). */
		if (!(id[i] == '-' || id[i] == '_' || (id[i] >= '0' && id[i] <= '9') ||
		      (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z')))
			return -EINVAL;
	return 0;
}

int fl_loader_prepare(bool tracefs)
{
	int err = fl_check_kernel();

	if (!err)
		err = fl_mount_bpffs();
	if (!err && tracefs)
		err = fl_mount_tracefs();
	return err;
}

int fl_check_kernel(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_warn(
		    "failed to find kernel BTF at /sys/kernel/btf/vmlinux: %s; flatline needs a "
		    "kernel built with CONFIG_DEBUG_INFO_BTF=y (Linux 5.8 or newer)\n",
		    strerror(errno));
		return -ENOTSUP;
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) != 1) {
		pr_warn("failed to find BPF ring buffer support in this kernel: flatline needs "
			"Linux 5.8 or newer\n");
		return -ENOTSUP;
	}
	return 0;
}

int fl_mount_bpffs(void)
{
	struct statfs st;

	if (!statfs(FL_BPFFS, &st) && st.f_type == BPF_FS_MAGIC)
		return 0;
	if (mkdir(FL_BPFFS, 0700) && errno != EEXIST) {
		pr_warn("failed to create %s: %s\n", FL_BPFFS, strerror(errno));
		return -errno;
	}
	if (mount("bpf", FL_BPFFS, "bpf", 0, "mode=0700")) {
		int err = -errno;

		pr_warn("failed to mount bpffs at %s: %s; mount it with `mount -t bpf bpf %s`\n",
			FL_BPFFS, strerror(errno), FL_BPFFS);
		return err;
	}
	pr_info("bpffs was not mounted: mounted it at %s\n", FL_BPFFS);
	return 0;
}

/* oom/mark_victim is a classic tracepoint: libbpf finds its id in tracefs. */
int fl_mount_tracefs(void)
{
	static const char path[] = "/sys/kernel/tracing";
	struct statfs st;

	if (!access("/sys/kernel/debug/tracing/events", F_OK) ||
	    (!statfs(path, &st) && st.f_type == TRACEFS_MAGIC))
		return 0;
	if (mount("tracefs", path, "tracefs", 0, NULL)) {
		int err = -errno;

		pr_warn("failed to mount tracefs at %s: %s; mount it with `mount -t tracefs "
			"tracefs %s`\n",
			path, strerror(errno), path);
		return err;
	}
	pr_info("tracefs was not mounted: mounted it at %s\n", path);
	return 0;
}

int fl_cgroup_id(const char *path, uint64_t *cgid)
{
	struct statfs sfs;
	struct stat st;

	if (statfs(path, &sfs) || stat(path, &st)) {
		pr_warn("failed to open cgroup %s: %s\n", path, strerror(errno));
		return -errno;
	}
	if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode)) {
		pr_warn("failed to watch cgroup %s: not a cgroup v2 directory (cgroup2 is usually "
			"mounted at /sys/fs/cgroup or /sys/fs/cgroup/unified)\n",
			path);
		return -ENOTDIR;
	}
	/* A cgroup v2 id is the inode number of its directory in cgroupfs. */
	*cgid = st.st_ino;
	return 0;
}

static int thread_alive(const char *stat_path)
{
	char buf[512], *p;
	FILE *f = fopen(stat_path, "r");

	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return 0;
	return p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* A process that exists and has not already exited: some thread of it is not a
 * zombie (the leader alone may be one after pthread_exit()). */
int fl_pid_alive(pid_t pid)
{
	char path[PATH_MAX];
	struct dirent *d;
	int alive = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!alive && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", (int)pid, d->d_name);
		alive = thread_alive(path);
	}
	closedir(dir);
	return alive;
}

/* Pins maps under dir (created if missing), replacing stale pins a killed
 * loader left: the caller holds the node's lock. */
void fl_node_pin_dir(char *buf, size_t len, const char *node)
{
	snprintf(buf, len, "%s/%s", FL_PIN_ROOT, node);
}

int fl_make_pin_dir(const char *dir)
{
	char path[PATH_MAX];
	size_t n = strlen(dir), root = strlen(FL_PIN_ROOT);

	if (n >= sizeof(path) || strncmp(dir, FL_PIN_ROOT, root))
		return -EINVAL;
	/* FL_PIN_ROOT, then each directory below it down to dir. */
	for (size_t i = root; i <= n; i++) {
		if (i < n && dir[i] != '/')
			continue;
		memcpy(path, dir, i);
		path[i] = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			int err = -errno;

			pr_warn("failed to create pin directory %s: %s\n", dir, strerror(errno));
			return err;
		}
	}
	return 0;
}

int fl_pin_maps(const char *dir, struct bpf_map **maps, int n)
{
	char path[PATH_MAX];
	int err;

	err = fl_make_pin_dir(dir);
	if (err)
		return err;
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(maps[i]));
		if (!unlink(path))
			pr_info("removed stale pin %s\n", path);
		err = bpf_map__pin(maps[i], path);
		if (err) {
			pr_warn("failed to pin map %s: %s\n", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Removes the pins, then dir and FL_PIN_ROOT if nobody else pins there. */
void fl_unpin_maps(const char *dir, struct bpf_map **maps, int n)
{
	char path[PATH_MAX];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(maps[i]));
		if (unlink(path) && errno != ENOENT)
			pr_warn("failed to remove pin %s: %s\n", path, strerror(errno));
	}
	if (rmdir(dir) && errno != ENOENT && errno != ENOTEMPTY)
		pr_warn("failed to remove %s: %s\n", dir, strerror(errno));
	rmdir(FL_PIN_ROOT);
}

uint64_t fl_percpu_sum(int map_fd, __u32 key)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;

	if (ncpu <= 0)
		return 0;
	__u64 vals[ncpu];
	if (bpf_map_lookup_elem(map_fd, &key, vals))
		return 0;
	for (int i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

int fl_ring_buffer_new(struct ring_buffer **out, struct bpf_map *map,
		       int (*fn)(void *ctx, void *data, size_t size), void *ctx)
{
	*out = ring_buffer__new(bpf_map__fd(map), fn, ctx, NULL);
	if (!*out) {
		int err = -errno;

		pr_warn("failed to create ring buffer: %s\n", strerror(errno));
		return err;
	}
	return 0;
}
