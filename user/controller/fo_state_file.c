// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The durable state file: each shard's primary and epoch, "shard <name> epoch
 * <n> primary <id>" lines and a checksum, written with write, fsync, rename,
 * fsync of the directory; read back at start through fo_set_primary. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "controller/fo_internal.h"
#include "controller/members.h"

#define FO_STATE_MAGIC "flatline-state 1"

static int parse_ull(const char *s, int base, unsigned long long *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, base);
	return errno || *end ? -EINVAL : 0;
}

/* c NULL: the shard lines are checked, not applied; member: called with each
 * membership line (after MB_PREFIX), NULL: they are skipped. */
static int parse_body(struct fo_cluster *c, const char *text, size_t len, const char *name,
		      int (*member)(void *ctx, const char *line), void *ctx, char *err,
		      size_t errlen)
{
	const char *p = text, *end = text + len, *body_end = NULL;
	int line = 0, nshard = 0, have_end = 0;
	unsigned long crc = 0;
	unsigned long long want = 0;
	size_t warn = 0;

	err[0] = '\0';
	if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "failed to load state file %s: NUL byte (damaged file)",
			 name);
		return -EINVAL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		char buf[512], sname[CFG_ID_MAX + 2], pname[CFG_ID_MAX + 2];
		unsigned long long epoch, u;
		char *w[8], wbuf[512];
		int nw = -1, cnt;

		line++;
		if (!nl) {
			snprintf(err, errlen,
				 "failed to load state file %s: line %d: no newline "
				 "(truncated file)",
				 name, line);
			return -EINVAL;
		}
		if (have_end) {
			snprintf(err, errlen,
				 "failed to load state file %s: line %d: data after "
				 "the end line",
				 name, line);
			return -EINVAL;
		}
		if ((size_t)(nl - p) >= sizeof(buf)) {
			snprintf(err, errlen, "failed to load state file %s: line %d: too long",
				 name, line);
			return -EINVAL;
		}
		memcpy(buf, p, nl - p);
		buf[nl - p] = '\0';
		if (line == 1) {
			if (strcmp(buf, FO_STATE_MAGIC)) {
				snprintf(err, errlen,
					 "failed to load state file %s: line 1: not a "
					 "flatline state file (want '%s')",
					 name, FO_STATE_MAGIC);
				return -EINVAL;
			}
		} else if (buf[0] == '#' || !buf[0]) {
			/* comment */
		} else if (!strncmp(buf, MB_PREFIX, strlen(MB_PREFIX))) {
			/* runtime membership (controller/ctl_members.c): read before the
			 * cluster is set up, through fo_state_members */
			if (member && member(ctx, buf + strlen(MB_PREFIX))) {
				snprintf(err, errlen,
					 "failed to load state file %s: line %d: cannot apply "
					 "'%.80s'",
					 name, line, buf);
				return -EINVAL;
			}
		} else if ((nw = mb_words(memcpy(wbuf, buf, sizeof(wbuf)), w, 8)) == 3 &&
			   !strcmp(w[0], "end") && !parse_ull(w[1], 10, &u) &&
			   !parse_ull(w[2], 16, &want)) {
			cnt = (int)u;
			body_end = p;
			have_end = 1;
			if (cnt != nshard) {
				snprintf(err, errlen,
					 "failed to load state file %s: line %d: %d "
					 "shard lines, the end line says %d",
					 name, line, nshard, cnt);
				return -EINVAL;
			}
		} else if (nw == 6 && !strcmp(w[0], "shard") && !strcmp(w[2], "epoch") &&
			   !parse_ull(w[3], 10, &epoch) && !strcmp(w[4], "primary") &&
			   strlen(w[1]) <= CFG_ID_MAX && strlen(w[5]) <= CFG_ID_MAX) {
			snprintf(sname, sizeof(sname), "%s", w[1]);
			snprintf(pname, sizeof(pname), "%s", w[5]);
			struct fo_shard *s = c ? fo_find_shard(c, sname) : NULL;
			struct fo_node *pn =
			    c && strcmp(pname, "-") ? fo_find_node(c, pname) : NULL;

			nshard++;
			if (!c) {
				/* checked only */
			} else if (!s) {
				warn += snprintf(err + warn, warn < errlen ? errlen - warn : 0,
						 "%sstate file %s: shard %s is no longer in the "
						 "cluster file, ignored",
						 warn ? "; " : "", name, sname);
			} else if (strcmp(pname, "-") && (!pn || pn->shard != s->idx)) {
				warn += snprintf(err + warn, warn < errlen ? errlen - warn : 0,
						 "%sstate file %s: node %s is not in shard %s any "
						 "more, primary unknown",
						 warn ? "; " : "", name, pname, sname);
				fo_set_primary(c, s, s->primary, epoch);
			} else {
				fo_set_primary(c, s, pn ? pn->idx : -1, epoch);
			}
		} else {
			snprintf(err, errlen,
				 "failed to load state file %s: line %d: cannot parse "
				 "'%.80s'",
				 name, line, buf);
			return -EINVAL;
		}
		p = nl + 1;
	}
	if (!have_end) {
		snprintf(err, errlen, "failed to load state file %s: no end line (truncated file)",
			 name);
		return -EINVAL;
	}
	crc = crc32(0, (const unsigned char *)text, body_end - text);
	if (crc != want) {
		snprintf(err, errlen,
			 "failed to load state file %s: checksum mismatch (%08lx, "
			 "want %08llx): the file is damaged",
			 name, crc, want);
		return -EINVAL;
	}
	return 0;
}

static int parse_text(struct fo_cluster *c, const char *text, size_t len, const char *name,
		      int (*member)(void *ctx, const char *line), void *ctx, char *err,
		      size_t errlen)
{
	if (member) { /* the membership lines only from a whole, checked file */
		int rc = parse_body(c, text, len, name, NULL, NULL, err, errlen);

		if (rc)
			return rc;
	}
	return parse_body(c, text, len, name, member, ctx, err, errlen);
}

int fo_state_parse(struct fo_cluster *c, const char *text, size_t len, const char *name, char *err,
		   size_t errlen)
{
	return parse_text(c, text, len, name, NULL, NULL, err, errlen);
}

static int load(struct fo_cluster *c, const char *path, int (*member)(void *ctx, const char *line),
		void *ctx, char *err, size_t errlen);

int fo_state_load(struct fo_cluster *c, const char *path, char *err, size_t errlen)
{
	return load(c, path, NULL, NULL, err, errlen);
}

int fo_state_members(const char *path, int (*member)(void *ctx, const char *line), void *ctx,
		     char *err, size_t errlen)
{
	return load(NULL, path, member, ctx, err, errlen);
}

static int load(struct fo_cluster *c, const char *path, int (*member)(void *ctx, const char *line),
		void *ctx, char *err, size_t errlen)
{
	char buf[65536];
	ssize_t n;
	size_t len = 0;
	int fd, rc;

	err[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc != -ENOENT)
			snprintf(err, errlen, "failed to open state file %s: %s", path,
				 strerror(errno));
		return rc;
	}
	while ((n = read(fd, buf + len, sizeof(buf) - len)) > 0) {
		len += n;
		if (len == sizeof(buf)) {
			close(fd);
			snprintf(err, errlen, "failed to load state file %s: larger than %zu bytes",
				 path, sizeof(buf) - 1);
			return -EFBIG;
		}
	}
	rc = n < 0 ? -errno : 0;
	close(fd);
	if (rc) {
		snprintf(err, errlen, "failed to read state file %s: %s", path, strerror(-rc));
		return rc;
	}
	return parse_text(c, buf, len, path, member, ctx, err, errlen);
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

char *fo_state_format(const struct fo_cluster *c, size_t *lenp)
{
	size_t cap = 256 + (size_t)c->nshards * 200 + (size_t)c->nnodes * 420, len = 0;
	char *buf = malloc(cap);
	int nshard = 0;

	if (!buf)
		return NULL;
	len += snprintf(buf + len, cap - len,
			FO_STATE_MAGIC "\n# written by the flatline controller; do not edit "
				       "while it runs\n");
	/* Membership changed at runtime first: a reader sets up the shards and nodes
	 * the shard lines name before it reads them. */
	if (c->cfg && mb_format_cfg(c->cfg, buf, cap, &len)) {
		free(buf);
		return NULL;
	}
	for (int i = 0; i < c->nshards; i++) {
		const struct fo_shard *s = &c->shards[i];

		if (s->removed || (c->cfg && i < c->cfg->nshards && c->cfg->shards[i].removed))
			continue;
		nshard++;
		len += snprintf(buf + len, cap - len, "shard %s epoch %llu primary %s\n", s->name,
				s->epoch, s->primary >= 0 ? c->nodes[s->primary].id : "-");
	}
	len += snprintf(buf + len, cap - len, "end %d %08lx\n", nshard,
			crc32(0, (const unsigned char *)buf, len));
	*lenp = len;
	return buf;
}

int fo_state_save(const struct fo_cluster *c, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *buf = fo_state_format(c, &len);
	int rc;

	if (!buf)
		return -ENOMEM;
	rc = fo_state_write(path, buf, len, err, errlen);
	free(buf);
	return rc;
}

int fo_state_write(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
	char tmp[300], dir[300];
	int fd = -1, dfd = -1, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "failed to create %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	rc = write_all(fd, buf, len);
	if (!rc && fsync(fd))
		rc = -errno;
	if (rc) {
		snprintf(err, errlen, "failed to write %s: %s", tmp, strerror(-rc));
		goto cleanup;
	}
	if (close(fd)) {
		fd = -1;
		rc = -errno;
		snprintf(err, errlen, "failed to write %s: %s", tmp, strerror(errno));
		goto cleanup;
	}
	fd = -1;
	if (rename(tmp, path)) {
		rc = -errno;
		snprintf(err, errlen, "failed to rename %s to %s: %s", tmp, path, strerror(errno));
		goto cleanup;
	}
	/* The rename itself is durable only once the directory is synced. */
	snprintf(dir, sizeof(dir), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync(dfd);
cleanup:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}
