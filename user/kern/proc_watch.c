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

int fl_valid_node_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 64 || id[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		/* No '.': bpffs refuses it in names (EPERM). */
		if (!(id[i] == '-' || id[i] == '_' ||
		      (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') ||
		      (id[i] >= 'A' && id[i] <= 'Z')))
			return -EINVAL;
	return 0;
}

int fl_check_kernel(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		pr_warn("failed to find kernel BTF at /sys/kernel/btf/vmlinux: %s; flatline needs a "
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

static int handle_event(void *ctx, void *data, size_t size)
{
	struct proc_watch *pw = ctx;

	if (size < sizeof(struct fl_proc_event))
		return 0;
	pw->cb(pw->ctx, data);
	return 0;
}

/* Pins maps under dir (created if missing), replacing stale pins a killed
 * loader left: the caller holds the node's lock. */
int fl_pin_maps(const char *dir, struct bpf_map **maps, int n)
{
	char path[PATH_MAX];
	int err;

	if ((mkdir(FL_PIN_ROOT, 0700) && errno != EEXIST) || (mkdir(dir, 0700) && errno != EEXIST)) {
		err = -errno;
		pr_warn("failed to create pin directory %s: %s\n", dir, strerror(errno));
		return err;
	}
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

int proc_watch_open(struct proc_watch **out, const struct proc_watch_opts *opts)
{
	struct bpf_map *maps[PROC_WATCH_NPINS];
	struct proc_watch *pw;
	int err;

	err = fl_check_kernel();
	if (err)
		return err;
	err = fl_mount_bpffs();
	if (err)
		return err;
	err = fl_mount_tracefs();
	if (err)
		return err;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->cb = opts->cb;
	pw->ctx = opts->ctx;
	snprintf(pw->pin_dir, sizeof(pw->pin_dir), "%s/%s", FL_PIN_ROOT, opts->node);

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
	pw->rb = ring_buffer__new(bpf_map__fd(pw->skel->maps.fl_events), handle_event, pw, NULL);
	if (!pw->rb) {
		err = -errno;
		pr_warn("failed to create ring buffer: %s\n", strerror(errno));
		goto cleanup;
	}
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

	if (bpf_map_delete_elem(bpf_map__fd(pw->skel->maps.fl_watch_pids), &key) &&
	    errno != ENOENT)
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
