/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the root daemons (agent, probe) share: libbpf's messages, the node lock,
 * millisecond options, the event log, and the signals that stop the loop. */
#ifndef FL_DAEMON_H
#define FL_DAEMON_H

#define DAEMON_LOCK_DIR "/run/flatline"

/* libbpf's own messages: warnings with -v, its debug output with -vv. */
void daemon_libbpf_messages(void);

/* One agent or prober per node: an flock on DAEMON_LOCK_DIR/agent-<node>.lock held for
 * the process's life (the kernel releases it however the process dies, so a
 * SIGKILLed one never blocks the next). Returns the fd, or -errno with a message
 * naming the holder's pid. */
int daemon_lock_node(const char *node);
/* At a clean stop: removes the lock file (while still holding it) and closes fd. A
 * killed process leaves the file behind; the next holder reuses it. */
void daemon_unlock_node(const char *node, int fd);

/* "--opt S": milliseconds in [1, max_ms]; -EINVAL with a message. */
int daemon_parse_ms(const char *opt, const char *s, int max_ms, int *out);

struct event_base;
struct event;
struct evlog;
struct evrec;

/* The event log at path, with the default size and segment limits. -errno with a
 * message naming path. */
int daemon_open_event_log(struct evlog **log, const char *path);
/* evlog_write(), with a warning naming path when it fails. */
void daemon_log_event(struct evlog *log, const char *path, struct evrec *r);

/* SIGTERM and SIGINT end the event loop, saying "received SIGTERM, stopping". */
struct daemon_stop {
	struct event *term, *intr;
};
/* 0, or -ENOMEM with "failed to set up the event loop". */
int daemon_stop_on_signals(struct daemon_stop *s, struct event_base *base);
void daemon_stop_free(struct daemon_stop *s);

/* systemd's Type=notify (sd_notify(3); without NOTIFY_SOCKET these do nothing):
 * READY=1 with a STATUS= line, and when the unit sets WatchdogSec= a WATCHDOG=1
 * from the event loop every half period, so a stuck loop gets the daemon restarted.
 * Returns -errno if the watchdog timer cannot be set up. */
int daemon_notify_ready(struct event_base *base, const char *status);
/* STATUS=... (printf format). */
void daemon_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1 and the watchdog timer's end. */
void daemon_notify_stopping(void);

#endif
