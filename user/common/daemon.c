// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <event2/event.h>
#include <systemd/sd-daemon.h>
#include <bpf/libbpf.h>
#include "common/daemon.h"
#include "common/event_log.h"
#include "common/log.h"

static int libbpf_print(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	int need = lvl == LIBBPF_DEBUG ? LOG_LVL_DEBUG + 1 : LOG_LVL_DEBUG;

	if (log_verbosity < need)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void daemon_libbpf_messages(void)
{
	libbpf_set_print(libbpf_print);
}

static void lock_path(char *path, size_t len, const char *node)
{
	snprintf(path, len, "%s/agent-%s.lock", DAEMON_LOCK_DIR, node);
}

/* Whether fd is still the file at path: a holder that stopped unlinks it after we
 * opened it, and a lock on an unlinked file locks nothing. */
static bool still_linked(int fd, const char *path)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int daemon_lock_node(const char *node)
{
	char path[PATH_MAX], buf[32];
	int fd, n, err;

	if (mkdir(DAEMON_LOCK_DIR, 0755) && errno != EEXIST) {
		err = -errno;
		pr_warn("failed to create %s: %s\n", DAEMON_LOCK_DIR, strerror(errno));
		return err;
	}
	lock_path(path, sizeof(path), node);
	for (int tries = 0;; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0) {
			err = -errno;
			pr_warn("failed to open lock %s: %s\n", path, strerror(errno));
			return err;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			n = (int)pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			pr_warn("failed to lock node %s: another agent or prober (pid %s) is "
				"running for it\n",
				node, n > 0 ? buf : "?");
			close(fd);
			return -EBUSY;
		}
		if (still_linked(fd, path))
			break;
		close(fd);
		if (tries >= 100) {
			pr_warn("failed to lock node %s: %s keeps being removed\n", node, path);
			return -EAGAIN;
		}
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, n, 0) != n)
		pr_warn("failed to write lock %s: %s\n", path, strerror(errno));
	return fd;
}

void daemon_unlock_node(const char *node, int fd)
{
	char path[PATH_MAX];

	if (fd < 0)
		return;
	lock_path(path, sizeof(path), node);
	if (still_linked(fd, path))
		unlink(path);
	close(fd);
}

int daemon_parse_ms(const char *opt, const char *s, int max_ms, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > max_ms) {
		pr_warn("%s %s: not a number of milliseconds (1-%d)\n", opt, s, max_ms);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static struct event *watchdog_ev;

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

int daemon_notify_ready(struct event_base *base, const char *status)
{
	uint64_t usec = 0;
	struct timeval tv;

	sd_notifyf(0, "READY=1\nSTATUS=%s\nMAINPID=%d", status, (int)getpid());
	if (sd_watchdog_enabled(0, &usec) <= 0 || watchdog_ev)
		return 0;
	usec /= 2;
	tv.tv_sec = usec / 1000000;
	tv.tv_usec = usec % 1000000;
	watchdog_ev = event_new(base, -1, EV_PERSIST, on_watchdog, NULL);
	if (!watchdog_ev || event_add(watchdog_ev, &tv)) {
		pr_warn("failed to set up the systemd watchdog timer\n");
		return -ENOMEM;
	}
	pr_debug("systemd watchdog: WATCHDOG=1 every %llu ms\n", (unsigned long long)usec / 1000);
	return 0;
}

void daemon_notify_status(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	sd_notifyf(0, "STATUS=%s", buf);
}

void daemon_notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
	if (watchdog_ev) {
		event_free(watchdog_ev);
		watchdog_ev = NULL;
	}
}

int daemon_open_event_log(struct evlog **log, const char *path)
{
	struct evlog_opts lo = {.path = path,
				.max_bytes = EVLOG_DEFAULT_MAX_BYTES,
				.max_segments = EVLOG_DEFAULT_SEGMENTS};
	int err = evlog_open(log, &lo);

	if (err)
		pr_warn("failed to open event log %s: %s\n", path, strerror(-err));
	return err;
}

void daemon_log_event(struct evlog *log, const char *path, struct evrec *r)
{
	int err = evlog_write(log, r);

	if (err)
		pr_warn("failed to write event log %s: %s\n", path, strerror(-err));
}

static void on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	pr_info("received %s, stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	event_base_loopbreak(arg);
}

int daemon_stop_on_signals(struct daemon_stop *s, struct event_base *base)
{
	s->term = evsignal_new(base, SIGTERM, on_stop_signal, base);
	s->intr = evsignal_new(base, SIGINT, on_stop_signal, base);
	if (!s->term || !s->intr || event_add(s->term, NULL) || event_add(s->intr, NULL)) {
		pr_warn("failed to set up the event loop\n");
		daemon_stop_free(s);
		return -ENOMEM;
	}
	return 0;
}

void daemon_stop_free(struct daemon_stop *s)
{
	if (s->term)
		event_free(s->term);
	if (s->intr)
		event_free(s->intr);
	s->term = s->intr = NULL;
}
