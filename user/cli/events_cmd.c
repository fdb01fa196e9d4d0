// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline events: print or follow the event log, rotated .gz segments included. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "cmds.h"
#include "common/clock.h"
#include "common/event_log.h"
#include "common/log.h"

#define FOLLOW_POLL_MS 100

struct show_opts {
	bool json;
	int64_t since_us; /* print events with ts after this; INT64_MIN for all */
};

/* One segment read line by line; a line longer than EVREC_MAX is skipped. */
struct seg_reader {
	gzFile gz; /* NULL when nothing is open */
	const char *name;
	unsigned long lineno; /* lines finished so far */
	size_t len;	      /* bytes of an unfinished line in buf */
	bool skipping;	      /* inside a line that was too long */
	char buf[EVREC_MAX + 1];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: flatline events [--log PATH] [-f|--follow] [--json] [--since DURATION]"
		   " [-h]\n\n"
		   "Print the event log, oldest first, rotated .gz segments included.\n"
		   "\n"
		   "  --log PATH        the live event log (default " EVLOG_DEFAULT_PATH ")\n"
		   "  -f, --follow      then print new events as they come, across rotations\n"
		   "  --json            print the JSON lines as written\n"
		   "  --since DURATION  only events newer than that: 500ms, 30s, 10m, 2h, 1d\n"
		   "  -h, --help        show this help\n");
}

/* "<digits><unit>", unit ms, s, m, h or d -> µs. */
static int parse_duration(const char *s, int64_t *us)
{
	static const struct {
		const char *unit;
		int64_t us;
	} units[] = {
	    {"ms", 1000}, {"s", 1000000}, {"m", 60000000}, {"h", 3600000000}, {"d", 86400000000},
	};
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; !errno && i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (v > (unsigned long long)(INT64_MAX / units[i].us))
			return -ERANGE;
		*us = v * units[i].us;
		return 0;
	}
	return -EINVAL;
}

/* A string as is, or double-quoted with C escapes when it is empty or holds blanks, quotes,
 * backslashes, '=' or control characters (C1 ones included): nothing reaches the terminal raw. */
static void print_value(const char *v, bool is_str)
{
	const unsigned char *p = (const unsigned char *)v;
	bool plain = !is_str || *p;

	for (; plain && *p; p++)
		plain = *p > ' ' && *p != 0x7f && !strchr("\"\\=", *p) &&
			!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f);
	if (plain) {
		fputs(v, stdout);
		return;
	}
	putchar('"');
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", stdout);
		else if (*p == '\t')
			fputs("\\t", stdout);
		else if (*p < ' ' || *p == 0x7f)
			printf("\\x%02x", *p);
		else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
			printf("\\u%04x", *++p);
		else
			putchar(*p);
	}
	putchar('"');
}

/* The line in sr->buf: checked, filtered, printed. */
static void show_line(const struct seg_reader *sr, const struct show_opts *o)
{
	struct evline ev;
	const char *ts, *node, *kind, *key, *sep = "  ";
	struct tm tm;
	time_t sec;
	int64_t us;
	char t[32];
	int i;

	if (evline_parse(&ev, sr->buf, sr->len) || !(ts = evline_get(&ev, "ts")) ||
	    evlog_parse_ts(ts, &us) || !(node = evline_get(&ev, "node")) ||
	    !(kind = evline_get(&ev, "kind"))) {
		pr_warn("%s:%lu: malformed event, skipped\n", sr->name, sr->lineno);
		return;
	}
	if (us <= o->since_us)
		return;
	if (o->json) {
		fwrite(sr->buf, 1, sr->len, stdout);
		if (sr->buf[sr->len - 1] != '\n')
			putchar('\n');
		return;
	}
	sec = us / 1000000 - (us % 1000000 < 0);
	gmtime_r(&sec, &tm);
	strftime(t, sizeof(t), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s.%06d  ", t, (int)(us - (int64_t)sec * 1000000));
	print_value(node, true);
	fputs("  ", stdout);
	print_value(kind, true);
	for (i = 0; i < ev.n; i++) {
		key = ev.f[i].key;
		if (!strcmp(key, "ts") || !strcmp(key, "node") || !strcmp(key, "kind"))
			continue;
		fputs(sep, stdout);
		sep = " ";
		print_value(key, true);
		putchar('=');
		print_value(ev.f[i].val, ev.f[i].is_str);
	}
	putchar('\n');
}

static int open_segment(struct seg_reader *sr, const char *name, struct stat *st)
{
	int fd = open(name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (st && fstat(fd, st)) {
		close(fd);
		return -errno;
	}
	sr->gz = gzdopen(fd, "r");
	if (!sr->gz) {
		close(fd);
		return -ENOMEM;
	}
	sr->name = name;
	sr->lineno = 0;
	sr->len = 0;
	sr->skipping = false;
	return 0;
}

/* Shows the lines up to the current end of the segment; an unfinished last one is kept.
 * 0, or 1 on a read error (a corrupt or truncated .gz). */
static int read_lines(struct seg_reader *sr, const struct show_opts *o)
{
	const char *msg, *p;
	int e;

	gzclearerr(sr->gz); /* a growing file: read past the end seen last time */
	while (gzgets(sr->gz, sr->buf + sr->len, sizeof(sr->buf) - sr->len)) {
		sr->len += strlen(sr->buf + sr->len);
		if (sr->len && sr->buf[sr->len - 1] == '\n') {
			sr->lineno++;
			if (!sr->skipping)
				show_line(sr, o);
			sr->skipping = false;
			sr->len = 0;
		} else if (sr->len == sizeof(sr->buf) - 1) {
			if (!sr->skipping)
				pr_warn("%s:%lu: line longer than %d bytes, skipped\n", sr->name,
					sr->lineno + 1, EVREC_MAX);
			sr->skipping = true;
			sr->len = 0;
		}
	}
	msg = gzerror(sr->gz, &e);
	if (e == Z_OK)
		return 0;
	p = strstr(msg, ": "); /* zlib prefixes "<fd:N>" */
	pr_warn("failed to read %s: %s\n", sr->name,
		e == Z_ERRNO ? strerror(errno)
		: p	     ? p + 2
			     : msg);
	return 1;
}

/* Shows an unfinished last line (a segment that will not grow) and closes. */
static void finish_segment(struct seg_reader *sr, const struct show_opts *o)
{
	if (sr->len && !sr->skipping) {
		sr->lineno++;
		show_line(sr, o);
	}
	gzclose(sr->gz);
	sr->gz = NULL;
}

/* 0, or 1 if the segment could not be opened or read. */
static int show_segment(struct seg_reader *sr, const char *name, const struct show_opts *o)
{
	char gz[PATH_MAX];
	int err = open_segment(sr, name, NULL);

	/* a plain rotated segment may have been compressed since it was listed */
	if (err == -ENOENT && (size_t)snprintf(gz, sizeof(gz), "%s.gz", name) < sizeof(gz))
		err = open_segment(sr, gz, NULL);
	if (err == -ENOENT)
		return 0; /* rotated away or removed since it was listed */
	if (err) {
		pr_warn("failed to open event log %s: %s\n", name, strerror(-err));
		return 1;
	}
	err = read_lines(sr, o);
	finish_segment(sr, o);
	return err;
}

/* Shows every segment, oldest first. */
static int show_log(const char *path, const struct show_opts *o)
{
	struct seg_reader sr = {};
	int n, i, rc = 0, err;
	char **segs;

	err = evlog_segments(path, &segs, &n);
	if (err) {
		pr_warn("failed to list event log %s: %s\n", path, strerror(-err));
		return 1;
	}
	if (!n) {
		pr_warn("failed to open event log %s: %s\n", path, strerror(ENOENT));
		return 1;
	}
	for (i = 0; i < n; i++)
		rc |= show_segment(&sr, segs[i], o);
	evlog_free_list(segs, n);
	return rc;
}

/* Shows the rotated segments above *seen, oldest first, and raises *seen. After a rotation
 * the first of them is the file just followed to its end: it is not shown again. The walk
 * stops at the live file if it has been rotated meanwhile: it is being read already. */
static void catch_up(struct seg_reader *sr, const char *path, unsigned long *seen, bool rotated,
		     const struct stat *live, const struct show_opts *o)
{
	size_t plen = strlen(path);
	unsigned long seq;
	struct stat st;
	int n, i, err;
	char **segs;

	err = evlog_segments(path, &segs, &n);
	if (err) {
		pr_warn("failed to list event log %s: %s\n", path, strerror(-err));
		return;
	}
	for (i = 0; i < n; i++) {
		if (!strcmp(segs[i], path))
			continue;
		seq = strtoul(segs[i] + plen + 1, NULL, 10); /* PATH.<seq>[.gz] */
		if (seq <= *seen)
			continue;
		if (live && !stat(segs[i], &st) && st.st_ino == live->st_ino &&
		    st.st_dev == live->st_dev)
			break;
		*seen = seq;
		if (rotated)
			rotated = false;
		else
			show_segment(sr, segs[i], o);
	}
	evlog_free_list(segs, n);
}

/* Like tail -F: shows the rotated segments, then reads PATH as it grows. When PATH is replaced
 * (rotation), removed or truncated, reads the old file to its end, shows any segment rotated
 * after it (several rotations can come between two polls), and reopens PATH, waiting for it to
 * appear. SIGINT and SIGTERM end it with 0; errors on the way are warnings. */
static int follow(const char *path, const struct show_opts *o)
{
	const struct timespec nap = {0, FOLLOW_POLL_MS * 1000000L};
	struct sigaction sa = {.sa_handler = on_signal};
	struct seg_reader cur = {}, seg = {};
	unsigned long seen = 0; /* rotated segments up to this seq are shown */
	bool rotated = false;
	struct stat live, st;
	int err;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	while (!stop) {
		if (!cur.gz) {
			err = open_segment(&cur, path, &live);
			if (err && err != -ENOENT) {
				pr_warn("failed to open event log %s: %s\n", path, strerror(-err));
				return 1;
			}
			catch_up(&seg, path, &seen, rotated, cur.gz ? &live : NULL, o);
			rotated = false;
		}
		if (cur.gz) {
			read_lines(&cur, o);
			rotated =
			    stat(path, &st) || st.st_ino != live.st_ino || st.st_dev != live.st_dev;
			if (rotated || st.st_size < gztell(cur.gz)) {
				/* lines written before the rename are in the old file: read them */
				read_lines(&cur, o);
				finish_segment(&cur, o);
				continue;
			}
		}
		fflush(stdout);
		nanosleep(&nap, NULL);
	}
	if (cur.gz)
		gzclose(cur.gz);
	return 0;
}

int cmd_events(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"log", required_argument, NULL, 'l'}, {"follow", no_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},	   {"since", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},	   {},
	};
	struct show_opts o = {.since_us = INT64_MIN};
	const char *path = EVLOG_DEFAULT_PATH;
	bool follow_mode = false;
	int64_t dur_us;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			path = optarg;
			break;
		case 'f':
			follow_mode = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 's':
			if (parse_duration(optarg, &dur_us)) {
				fprintf(stderr,
					"flatline: invalid duration '%s' for --since "
					"(examples: 500ms, 30s, 10m, 2h, 1d)\n",
					optarg);
				return 2;
			}
			o.since_us = fl_wall_us() - dur_us;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			fprintf(stderr, "flatline: option '%s' needs an argument\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		default:
			fprintf(stderr, "flatline: invalid option '%s'\n", argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "flatline: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	rc = follow_mode ? follow(path, &o) : show_log(path, &o);
	if (fflush(stdout) || ferror(stdout)) {
		pr_warn("failed to write events: %s\n", strerror(errno));
		rc = 1;
	}
	return rc;
}
