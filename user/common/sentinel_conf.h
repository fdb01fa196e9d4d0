/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A Redis Sentinel's configuration file (sentinel.conf), read as a running Sentinel
 * reads and rewrites it: Redis's config syntax (one directive a line, arguments split
 * as sdssplitargs splits them: "double quotes" with \n \r \t \b \a \\ \" \xHH,
 * 'single quotes' with \', a closing quote followed by a blank or the end), `#`
 * comments, and the `sentinel <option> ...` directives of sentinelHandleConfiguration
 * with their argument counts, in any order (a master's options may come before its
 * `monitor`, as Sentinel queues them). Everything else a sentinel.conf may hold (the
 * Sentinel process's own Redis options) is kept by name and line, for `flatline import`
 * to say it was not mapped. No I/O but sc_parse_file(); errors read `file:line: reason`. */
#ifndef FL_SENTINEL_CONF_H
#define FL_SENTINEL_CONF_H

#include <stdbool.h>
#include <stddef.h>

#define SC_MAX_MASTERS	 64
#define SC_MAX_REPLICAS	 32
#define SC_MAX_SENTINELS 16
#define SC_MAX_NOTES	 128
#define SC_MAX_ARGS	 16
#define SC_MAX_LINE	 4096
#define SC_NAME_MAX	 128
#define SC_HOST_MAX	 256
#define SC_VAL_MAX	 256

/* Sentinel's defaults: a value equal to one is what Sentinel leaves out on rewrite. */
#define SC_DEFAULT_DOWN_AFTER_MS 30000
#define SC_DEFAULT_FAILOVER_MS	 180000
#define SC_DEFAULT_PARALLEL	 1

struct sc_addr {
	char host[SC_HOST_MAX];
	int port;
	int priority;	/* replica-priority; -1: not known (a file's known-replica) */
	char runid[48]; /* known-sentinel only */
};

/* A value of a master and the line that set it (0 = not set). */
struct sc_num {
	long long v;
	int line;
};
struct sc_str {
	char v[SC_VAL_MAX];
	int line;
};

struct sc_master {
	char name[SC_NAME_MAX];
	int line; /* of its monitor */
	struct sc_addr addr;
	int quorum;
	struct sc_num down_after_ms, failover_timeout_ms, parallel_syncs, reboot_down_after_ms;
	struct sc_num config_epoch, leader_epoch;
	struct sc_str auth_pass, auth_user, notification_script, client_reconfig_script;
	int nrenamed, renamed_line; /* sentinel rename-command: how many, the first line */
	char renamed[SC_VAL_MAX];   /* "CONFIG->XCONFIG ..." as far as it fits */
	struct sc_addr replicas[SC_MAX_REPLICAS];
	int nreplicas;
	struct sc_addr sentinels[SC_MAX_SENTINELS];
	int nsentinels;
};

/* A directive kept for the report: its name ("sentinel myid", "port", ...) and line. */
struct sc_note {
	char what[64];
	int line;
};

struct sc_conf {
	char name[256]; /* the file, in messages */
	bool live;	/* filled from a live Sentinel's replies (lines are 0) */
	struct sc_master masters[SC_MAX_MASTERS];
	int nmasters;
	/* global sentinel options */
	char myid[48];
	struct sc_num current_epoch, announce_port, port;
	struct sc_str announce_ip, bind, requirepass, sentinel_user, sentinel_pass;
	int resolve_hostnames, announce_hostnames, deny_scripts_reconfig; /* -1 unset, 0, 1 */
	struct sc_note notes[SC_MAX_NOTES]; /* directives with nothing to map */
	int nnotes, notes_dropped;
};

/* Splits one line as Redis's sdssplitargs does into at most max arguments, each
 * copied NUL-terminated into buf (of buflen bytes). The number of arguments, or
 * -EINVAL (unbalanced quotes, a closing quote not followed by a blank, a NUL byte in an
 * argument), -E2BIG (more than max arguments, or buf too small). */
int sc_split(const char *line, char **argv, int max, char *buf, size_t buflen);

/* Reads the text of a whole sentinel.conf (len bytes, need not be NUL-terminated)
 * into c. 0, or -EINVAL with `name:line: reason` in err. */
int sc_parse(struct sc_conf *c, const char *name, const char *text, size_t len, char *err,
	     size_t errlen);
/* Reads the file at path (at most 4 MiB). As sc_parse, or -errno when it cannot be read
 * (with the reason in err). */
int sc_parse_file(struct sc_conf *c, const char *path, char *err, size_t errlen);

struct sc_master *sc_find_master(struct sc_conf *c, const char *name);

#endif
