// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Loads bpf/sched.bpf.c, tells it which processes are servers, seeds their
 * threads' states from /proc, and reads them back for the server monitor. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common/clock.h"
#include "common/log.h"
#include "kern/loader.h"
#include "kern/sched_watch.h"
#include "sched.skel.h"

#define SCHED_WATCH_NPINS 3

struct sched_watch {
	struct fl_sched *skel;
	struct ring_buffer *rb;
	sched_watch_event_fn cb;
	void *ctx;
	pid_t pids[FL_SCHED_MAX_SRV];
	int npids;
	char pin_dir[128];
};

static void pinned_maps(struct fl_sched *skel, struct bpf_map **maps)
{
	maps[0] = skel->maps.fl_sched_thr;
	maps[1] = skel->maps.fl_sched_srv;
	maps[2] = skel->maps.fl_sched_drops;
}

const char *sched_state_name(uint32_t state)
{
	static const char *const names[] = {"unknown", "running", "runnable", "sleeping",
					    "blocked", "stopped", "frozen",   "dead"};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "unknown";
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct sched_watch *sw = ctx;

	if (size >= sizeof(struct fl_sched_event) && sw->cb)
		sw->cb(sw->ctx, data);
	return 0;
}

int sched_watch_open(struct sched_watch **out, const struct sched_watch_opts *opts)
{
	struct bpf_map *maps[SCHED_WATCH_NPINS];
	struct sched_watch *sw;
	int err;

	sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->cb = opts->cb;
	sw->ctx = opts->ctx;
	fl_node_pin_dir(sw->pin_dir, sizeof(sw->pin_dir), opts->node);
	sw->skel = fl_sched__open_and_load();
	if (!sw->skel) {
		err = -errno;
		pr_warn("failed to load BPF object fl_sched: %s (run with -v for the verifier's "
			"log)\n",
			strerror(errno));
		goto cleanup;
	}
	err = fl_sched__attach(sw->skel);
	if (err) {
		pr_warn("failed to attach BPF programs of fl_sched: %s\n", strerror(-err));
		goto cleanup;
	}
	pinned_maps(sw->skel, maps);
	err = fl_pin_maps(sw->pin_dir, maps, SCHED_WATCH_NPINS);
	if (err)
		goto cleanup;
	err = fl_ring_buffer_new(&sw->rb, sw->skel->maps.fl_sched_ev, handle_event, sw);
	if (err)
		goto cleanup;
	*out = sw;
	return 0;
cleanup:
	sched_watch_close(sw);
	return err;
}

/* The bitmap the programs test before any lookup, from the watched pids. */
static void set_bits(struct sched_watch *sw)
{
	__u64 bits[FL_SCHED_BITS / 64] = {};

	for (int i = 0; i < sw->npids; i++) {
		unsigned b = (unsigned)sw->pids[i] & (FL_SCHED_BITS - 1);

		bits[b / 64] |= 1ULL << (b % 64);
	}
	for (int i = 0; i < FL_SCHED_BITS / 64; i++)
		__atomic_store_n(&sw->skel->bss->tgid_bits[i], bits[i], __ATOMIC_SEQ_CST);
}

/* The state letter of /proc/PID/task/TID/stat. */
static uint32_t proc_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return FL_TS_DEAD;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')) || p[1] != ' ')
		return FL_TS_UNKNOWN;
	switch (p[2]) {
	case 'R':
		return FL_TS_RUNNING;
	case 'S':
	case 'I':
		return FL_TS_SLEEPING;
	case 'D':
		return FL_TS_BLOCKED;
	case 'T':
	case 't':
		return FL_TS_STOPPED;
	case 'Z':
	case 'X':
		return FL_TS_DEAD;
	}
	return FL_TS_UNKNOWN;
}

int sched_watch_add(struct sched_watch *sw, pid_t pid, pid_t judged)
{
	int thr = bpf_map__fd(sw->skel->maps.fl_sched_thr);
	char path[64];
	struct dirent *d;
	__u32 key = pid, one = 1;
	DIR *dir;
	int i;

	for (i = 0; i < sw->npids && sw->pids[i] != pid; i++)
		;
	if (i == sw->npids) {
		if (sw->npids == FL_SCHED_MAX_SRV)
			return -E2BIG;
		sw->pids[sw->npids++] = pid;
	}
	if (bpf_map_update_elem(bpf_map__fd(sw->skel->maps.fl_sched_srv), &key, &one, BPF_ANY))
		return -errno;
	set_bits(sw);
	/* From here the programs keep every thread already in the map and add
	 * new ones: seed the existing threads, without overwriting an entry a
	 * switch may have made since. */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		struct fl_sched_thread t = {.tgid = pid, .syscall_nr = FL_SCHED_NO_SYSCALL};
		char *end;
		long tid = strtol(d->d_name, &end, 10);

		if (d->d_name[0] == '.' || *end || tid <= 0)
			continue;
		t.state = proc_state(pid, tid);
		t.since_ns = fl_clock_ns(CLOCK_MONOTONIC);
		t.judged = tid == judged;
		key = tid;
		if (bpf_map_update_elem(thr, &key, &t, BPF_NOEXIST) && errno == EEXIST &&
		    tid == judged) {
			struct fl_sched_thread cur;

			if (!bpf_map_lookup_elem(thr, &key, &cur) && !cur.judged) {
				cur.judged = 1;
				/* Fails only if the thread exited meanwhile. */
				(void)bpf_map_update_elem(thr, &key, &cur, BPF_EXIST);
			}
		}
	}
	closedir(dir);
	return 0;
}

void sched_watch_remove(struct sched_watch *sw, pid_t pid)
{
	int thr = bpf_map__fd(sw->skel->maps.fl_sched_thr);
	__u32 key = pid, next, *prev = NULL;
	__u32 dead[256];
	int ndead = 0, i;

	for (i = 0; i < sw->npids && sw->pids[i] != pid; i++)
		;
	if (i < sw->npids) {
		sw->pids[i] = sw->pids[--sw->npids];
		set_bits(sw);
	}
	/* ENOENT: never added, or gone already; nothing else can fail here. */
	(void)bpf_map_delete_elem(bpf_map__fd(sw->skel->maps.fl_sched_srv), &key);
	/* Collect first: deleting while iterating restarts the walk. */
	while (!bpf_map_get_next_key(thr, prev, &next)) {
		struct fl_sched_thread t;

		if (!bpf_map_lookup_elem(thr, &next, &t) && t.tgid == (__u32)pid &&
		    ndead < (int)(sizeof(dead) / sizeof(dead[0])))
			dead[ndead++] = next;
		key = next;
		prev = &key;
	}
	for (i = 0; i < ndead; i++)
		(void)bpf_map_delete_elem(thr, &dead[i]); /* the exit program may be first */
}

int sched_watch_sample(struct sched_watch *sw, pid_t tid, struct sched_sample *out)
{
	struct fl_sched_thread t;
	__u32 key = tid;
	uint64_t now;

	if (bpf_map_lookup_elem(bpf_map__fd(sw->skel->maps.fl_sched_thr), &key, &t))
		return -ENOENT;
	now = fl_clock_ns(CLOCK_MONOTONIC);
	if (now < t.since_ns)
		now = t.since_ns;
	out->now_ns = now;
	out->since_ns = t.since_ns;
	out->run_ns = t.run_ns + (t.state == FL_TS_RUNNING ? now - t.since_ns : 0);
	out->wait_ns = t.wait_ns + (t.state == FL_TS_RUNNABLE ? now - t.since_ns : 0);
	out->nr_switch = t.nr_switch;
	out->state = t.state;
	out->syscall_nr = t.syscall_nr;
	return 0;
}

int sched_watch_epoll_fd(const struct sched_watch *sw)
{
	return ring_buffer__epoll_fd(sw->rb);
}

int sched_watch_consume(struct sched_watch *sw)
{
	return ring_buffer__consume(sw->rb);
}

uint64_t sched_watch_drops(const struct sched_watch *sw)
{
	return fl_percpu_sum(bpf_map__fd(sw->skel->maps.fl_sched_drops), 0);
}

void sched_watch_close(struct sched_watch *sw)
{
	if (!sw)
		return;
	ring_buffer__free(sw->rb);
	if (sw->skel) {
		struct bpf_map *maps[SCHED_WATCH_NPINS];

		pinned_maps(sw->skel, maps);
		fl_unpin_maps(sw->pin_dir, maps, SCHED_WATCH_NPINS);
	}
	fl_sched__destroy(sw->skel);
	free(sw);
}
