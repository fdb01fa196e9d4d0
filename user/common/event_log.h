/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The event log: one JSON object per line, size-based rotation, rotated
 * segments gzip-compressed. Writer for the daemons, reader for `flatline events`. */
#ifndef FL_EVENT_LOG_H
#define FL_EVENT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define EVLOG_DEFAULT_PATH	"/var/log/flatline/events.jsonl"
#define EVLOG_DEFAULT_MAX_BYTES (64u << 20)
#define EVLOG_DEFAULT_SEGMENTS	8
#define EVREC_MAX		4096 /* one event line, newline included */
#define EVREC_KIND_MAX		64   /* the kind as the record carries it, '\0' included */

/* One event being built: evrec_begin(), fields, then evlog_write(). */
struct evrec {
	char buf[EVREC_MAX];
	size_t len;
	int overflow; /* a field did not fit: the record is cut at the last whole field */
	/* The kind given to evrec_begin(), for whoever counts or routes the record without
	 * reading its JSON: "" for a NULL kind, cut at EVREC_KIND_MAX - 1 bytes. */
	char kind[EVREC_KIND_MAX];
};

/* ts NULL = now (CLOCK_REALTIME). Writes {"ts":"…Z","node":…,"kind":… and keeps the
 * kind in r->kind. A NULL string value is written as null; invalid UTF-8 bytes as \ufffd. */
void evrec_begin(struct evrec *r, const struct timespec *ts, const char *node, const char *kind);
void evrec_str(struct evrec *r, const char *key, const char *val);
void evrec_int(struct evrec *r, const char *key, long long val);
void evrec_uint(struct evrec *r, const char *key, unsigned long long val);
void evrec_bool(struct evrec *r, const char *key, bool val);
void evrec_double(struct evrec *r, const char *key, double val, int decimals);
/* Closes the object and appends '\n'; returns the line (also r->buf). */
const char *evrec_end(struct evrec *r);

/* Zero or NULL members take the defaults above. */
struct evlog_opts {
	const char *path;   /* the live segment; rotated ones are PATH.<seq>.gz */
	uint64_t max_bytes; /* rotate when the live segment would grow past this */
	int max_segments;   /* rotated segments kept; older ones removed */
};

/* One thread writes (the daemon's event loop); compression runs on a worker of its own. */
struct evlog;

/* Opens (creating the directory if missing) for append. -errno on failure. */
int evlog_open(struct evlog **out, const struct evlog_opts *opts);
/* Writes r (evrec_end() is applied if not done yet) with one write(2);
 * rotates first when needed. -errno on failure. */
int evlog_write(struct evlog *l, struct evrec *r);
/* Keeps a copy of r (written already: the daemon's start record) and writes it
 * again, with "repeated": true added, at the top of every segment a rotation
 * opens, so no amount of later events rotates the record of who started, when
 * and how away. -ENOMEM, or -EINVAL for an empty record. */
int evlog_pin(struct evlog *l, const struct evrec *r);
/* fdatasync of the live segment. */
int evlog_sync(struct evlog *l);
/* Waits for a compression in progress, syncs and closes. NULL is fine. */
void evlog_close(struct evlog *l);

/* Reading back. Segments oldest first: PATH.<seq>.gz (or PATH.<seq> while being
 * compressed) by rising seq, then PATH itself. Caller frees with evlog_free_list. */
int evlog_segments(const char *path, char ***list, int *n);
void evlog_free_list(char **list, int n);

/* A parsed event line: a flat JSON object of strings, numbers, booleans, null. */
#define EVLINE_MAX_FIELDS 48
struct evfield {
	const char *key;
	const char *val; /* unescaped string, or the literal number/true/false/null */
	int is_str;
};
struct evline {
	char buf[EVREC_MAX];
	struct evfield f[EVLINE_MAX_FIELDS];
	int n;
};
/* 0, or -EINVAL for anything that is not one flat JSON object (nested values,
 * bad escapes, trailing garbage, too many fields, too long). */
int evline_parse(struct evline *ev, const char *line, size_t len);
const char *evline_get(const struct evline *ev, const char *key);
/* RFC 3339 "2026-11-30T10:00:00.123456Z" -> µs since the epoch; -EINVAL if malformed. */
int evlog_parse_ts(const char *s, int64_t *us);

#endif
