/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The server's cgroup CPU throttling, read by the server monitor (srvmon.c) while the
 * server is silent: a throttled cgroup is the "throttled" cause of a hang. */
#ifndef FLATLINE_AGENT_CPU_STAT_H
#define FLATLINE_AGENT_CPU_STAT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The cpu.stat of pid's cgroup that has throttling figures into out: cgroup v2's when
 * the cpu controller is there, else cgroup v1's cpu hierarchy; "" if none. */
void cpu_stat_find(pid_t pid, char *out, size_t len);
/* The time the cgroup of the cpu.stat at path spent throttled, in µs (v2
 * throttled_usec, v1 throttled_time in ns); -1 if path is "" or has no such figure. */
int64_t cpu_stat_throttled_us(const char *path);

#endif
