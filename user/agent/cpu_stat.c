// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The server's cgroup CPU throttling, one of the causes of a silence (cpu_stat.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agent/cpu_stat.h"

/* Where a cgroup hierarchy is mounted: "cgroup2", or "cgroup" with the cpu
 * controller among its options. "" if not mounted. */
static void cgroup_mount(bool v2, char *out, size_t len)
{
	char dev[64], dir[256], type[32], opts[256];
	FILE *f = fopen("/proc/mounts", "r");

	out[0] = '\0';
	while (f && fscanf(f, "%63s %255s %31s %255s %*d %*d", dev, dir, type, opts) == 4) {
		char *o, *save = NULL;

		if (v2 && !strcmp(type, "cgroup2")) {
			snprintf(out, len, "%s", dir);
			break;
		}
		if (v2 || strcmp(type, "cgroup"))
			continue;
		for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strcmp(o, "cpu"))
				break;
		if (o) {
			snprintf(out, len, "%s", dir);
			break;
		}
	}
	if (f)
		fclose(f);
}

void cpu_stat_find(pid_t pid, char *out, size_t len)
{
	char buf[512], path[64], mnt[256];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(buf, sizeof(buf), f)) {
		char *ctl = strchr(buf, ':'), *cg = ctl ? strchr(ctl + 1, ':') : NULL;
		bool v2 = ctl && ctl[1] == ':';

		if (!cg)
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		if (!v2) {
			char *o, *save = NULL;

			for (o = strtok_r(ctl + 1, ",", &save); o; o = strtok_r(NULL, ",", &save))
				if (!strcmp(o, "cpu"))
					break;
			if (!o)
				continue;
		}
		cgroup_mount(v2, mnt, sizeof(mnt));
		if (!mnt[0])
			continue;
		snprintf(out, len, "%.120s%.170s/cpu.stat", mnt, strcmp(cg, "/") ? cg : "");
		/* v2 without the cpu controller has a cpu.stat without throttling. */
		if (cpu_stat_throttled_us(out) >= 0)
			break;
		out[0] = '\0';
	}
	if (f)
		fclose(f);
}

int64_t cpu_stat_throttled_us(const char *path)
{
	static const struct {
		const char *key;
		int div;
	} keys[] = {{"throttled_usec ", 1}, {"throttled_time ", 1000}};
	char buf[256], *end;
	long long v = -1;
	FILE *f;

	if (!path[0] || !(f = fopen(path, "r")))
		return -1;
	while (v < 0 && fgets(buf, sizeof(buf), f)) {
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			size_t n = strlen(keys[i].key);
			long long x;

			if (strncmp(buf, keys[i].key, n))
				continue;
			errno = 0;
			x = strtoll(buf + n, &end, 10);
			if (!errno && end != buf + n && x >= 0)
				v = x / keys[i].div;
		}
	}
	fclose(f);
	return v;
}
