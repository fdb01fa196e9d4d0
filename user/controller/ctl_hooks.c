// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Sentinel's scripts: [controller] notification_script runs as
 * `script <event-type> <event-description>` for the events Sentinel notifies
 * (warning level: +sdown, +odown, +switch-master ...), and client_reconfig_script as
 * `script <master-name> leader start <from-ip> <from-port> <to-ip> <to-port>` after a
 * failover. As Sentinel runs them: never from the loop (fork + exec, reaped on
 * SIGCHLD), at most HOOK_MAX_RUNNING at once and HOOK_MAX_QUEUE queued (the oldest
 * not yet started dropped), killed after script-max-runtime (60 s), run again after
 * script-retry-delay (30 s) when they exit 1 or are killed by a signal, HOOK_MAX_RUNS
 * runs at most as Sentinel's retry_num; any other exit code is final. SENTINEL
 * PENDING-SCRIPTS lists them; SENTINEL DEBUG script-max-runtime|script-retry-delay
 * sets the two times, as Sentinel's. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include "common/clock.h"
#include "common/log.h"
#include "controller/ctl.h"

#define HOOK_MAX_QUEUE	 256
#define HOOK_MAX_RUNNING 16
#define HOOK_MAX_RUNS	 10 /* Sentinel's SENTINEL_SCRIPT_MAX_RETRY: runs, the first included */
#define HOOK_MAX_ARGS	 8

struct hook {
	char *argv[HOOK_MAX_ARGS + 1];
	int argc;
	pid_t pid; /* running: > 0 */
	int retries;
	long long start_ms; /* running since, or when to start */
	struct hook *next;
};

static struct hook *queue; /* in order */
static int nqueued, nrunning;
static struct event *sigchld_ev, *tick_ev;
static struct ctl *hooks_ctl;
static int max_runtime_ms = 60000; /* SENTINEL_SCRIPT_MAX_RUNTIME */
static int retry_delay_ms = 30000; /* SENTINEL_SCRIPT_RETRY_DELAY */

void ctl_hooks_set_times(int runtime_ms, int retry_ms)
{
	if (runtime_ms > 0)
		max_runtime_ms = runtime_ms;
	if (retry_ms >= 0)
		retry_delay_ms = retry_ms;
}

int ctl_hooks_max_runtime_ms(void)
{
	return max_runtime_ms;
}

int ctl_hooks_retry_delay_ms(void)
{
	return retry_delay_ms;
}

static void hook_free(struct hook *h)
{
	for (int i = 0; i < h->argc; i++)
		free(h->argv[i]);
	free(h);
}

static void unlink_hook(struct hook *h)
{
	for (struct hook **p = &queue; *p; p = &(*p)->next) {
		if (*p == h) {
			*p = h->next;
			nqueued--;
			return;
		}
	}
}

static void log_hook(const char *kind, const struct hook *h, const char *why)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "script", h->argv[0]);
	evrec_str(&r, "arg1", h->argc > 1 ? h->argv[1] : "");
	evrec_int(&r, "retries", h->retries);
	evrec_str(&r, "reason", why);
	ctl_log(hooks_ctl, &r);
}

static void start_hook(struct hook *h)
{
	pid_t pid = fork();

	if (pid < 0) {
		h->start_ms = fl_mono_ms() + retry_delay_ms;
		pr_warn("failed to start %s: %s\n", h->argv[0], strerror(errno));
		return;
	}
	if (!pid) {
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			if (fd > 2)
				close(fd);
		}
		/* Nothing of ours outlives us in the script (the listen socket above all). */
		for (long i = 3, max = sysconf(_SC_OPEN_MAX);
		     i < (max > 0 && max < 65536 ? max : 65536); i++)
			close((int)i);
		signal(SIGPIPE, SIG_DFL);
		execv(h->argv[0], h->argv);
		_exit(2); /* not retried, as Sentinel's exec failure */
	}
	h->pid = pid;
	h->start_ms = fl_mono_ms();
	nrunning++;
}

static void run_ready(void)
{
	long long now = fl_mono_ms();

	for (struct hook *h = queue; h && nrunning < HOOK_MAX_RUNNING; h = h->next)
		if (!h->pid && h->start_ms <= now)
			start_hook(h);
}

static void finished(struct hook *h, int status)
{
	bool retry = (WIFEXITED(status) && WEXITSTATUS(status) == 1) || WIFSIGNALED(status);
	char why[64];

	nrunning--;
	h->pid = 0;
	if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		unlink_hook(h);
		hook_free(h);
		return;
	}
	if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, sizeof(why), "exit code %d", WEXITSTATUS(status));
	if (retry && h->retries + 1 < HOOK_MAX_RUNS) {
		h->retries++;
		h->start_ms = fl_mono_ms() + retry_delay_ms;
		log_hook("script_retry", h, why);
		return;
	}
	log_hook("script_failed", h, why);
	unlink_hook(h);
	hook_free(h);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	int status;
	pid_t pid;

	(void)sig;
	(void)what;
	(void)arg;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (struct hook *h = queue; h; h = h->next) {
			if (h->pid == pid) {
				finished(h, status);
				break;
			}
		}
	}
	run_ready();
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	long long now = fl_mono_ms();

	(void)fd;
	(void)what;
	(void)arg;
	for (struct hook *h = queue; h; h = h->next) {
		if (h->pid > 0 && now - h->start_ms > max_runtime_ms) {
			pr_warn("%s ran for more than %d ms: killed\n", h->argv[0], max_runtime_ms);
			kill(h->pid, SIGKILL); /* reaped on SIGCHLD, retried as a signal */
		}
	}
	run_ready();
}

int ctl_hooks_start(struct ctl *c)
{
	const struct timeval tv = {0, 100000}; /* Sentinel's timer: 10 Hz */

	hooks_ctl = c;
	if (!c->cfg->controller.notification_script[0] &&
	    !c->cfg->controller.client_reconfig_script[0])
		return 0;
	sigchld_ev = evsignal_new(c->base, SIGCHLD, on_sigchld, NULL);
	tick_ev = event_new(c->base, -1, EV_PERSIST, on_tick, NULL);
	if (!sigchld_ev || !tick_ev || evsignal_add(sigchld_ev, NULL) || event_add(tick_ev, &tv))
		return -ENOMEM;
	return 0;
}

void ctl_hooks_stop(void)
{
	while (queue) {
		struct hook *h = queue;

		queue = h->next;
		hook_free(h);
	}
	nqueued = nrunning = 0;
	if (sigchld_ev)
		event_free(sigchld_ev);
	if (tick_ev)
		event_free(tick_ev);
	sigchld_ev = tick_ev = NULL;
}

static void schedule(const char *script, int argc, const char **args)
{
	struct hook *h, **tail;

	if (nqueued >= HOOK_MAX_QUEUE) { /* drop the oldest not running, as Sentinel */
		for (h = queue; h && h->pid; h = h->next)
			;
		if (!h) {
			pr_warn("script queue full: %s %s not run\n", script, argc ? args[0] : "");
			return;
		}
		log_hook("script_dropped", h, "queue full");
		unlink_hook(h);
		hook_free(h);
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return;
	h->argv[h->argc++] = strdup(script);
	for (int i = 0; i < argc && h->argc < HOOK_MAX_ARGS; i++)
		h->argv[h->argc++] = strdup(args[i]);
	for (int i = 0; i < h->argc; i++) {
		if (!h->argv[i]) {
			hook_free(h);
			return;
		}
	}
	for (tail = &queue; *tail; tail = &(*tail)->next)
		;
	*tail = h;
	nqueued++;
	run_ready();
}

/* Sentinel notifies (LL_WARNING) these. */
static bool notified(const char *channel)
{
	static const char *const kinds[] = {"+sdown",
					    "-sdown",
					    "+odown",
					    "-odown",
					    "+new-epoch",
					    "+try-failover",
					    "+elected-leader",
					    "+selected-slave",
					    "+promoted-slave",
					    "+failover-end",
					    "+switch-master",
					    "+tilt",
					    "-tilt"};

	if (!strncmp(channel, "-failover-abort", 15))
		return true;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(channel, kinds[i]))
			return true;
	return false;
}

void ctl_hooks_event(struct ctl *c, const char *channel, const char *msg)
{
	const char *ns = c->cfg->controller.notification_script;
	const char *rs = c->cfg->controller.client_reconfig_script;

	if (ns[0] && notified(channel)) {
		const char *args[] = {channel, msg};

		schedule(ns, 2, args);
	}
	if (rs[0] && !strcmp(channel, "+switch-master")) {
		char name[256], oip[64], op[16], nip[64], np[16];

		if (sscanf(msg, "%255s %63s %15s %63s %15s", name, oip, op, nip, np) == 5) {
			const char *args[] = {name, "leader", "start", oip, op, nip, np};

			schedule(rs, 7, args);
		}
	}
}

int ctl_hooks_running(void)
{
	return nrunning;
}

int ctl_hooks_queued(void)
{
	return nqueued;
}

/* SENTINEL PENDING-SCRIPTS: one map per script, as Sentinel. */
void ctl_hooks_pending(const struct ctl_conn *k, struct evbuffer *out)
{
	long long now = fl_mono_ms();
	char b[32];

	resp_array(out, nqueued);
	for (struct hook *h = queue; h; h = h->next) {
		ctl_reply_map(k, out, 5);
		resp_str(out, "argv");
		resp_array(out, h->argc);
		for (int i = 0; i < h->argc; i++)
			resp_str(out, h->argv[i]);
		resp_str(out, "flags");
		resp_str(out, h->pid ? "running" : "scheduled");
		resp_str(out, "pid");
		snprintf(b, sizeof(b), "%d", (int)h->pid);
		resp_str(out, b);
		resp_str(out, h->pid ? "run-time" : "run-delay");
		snprintf(b, sizeof(b), "%lld",
			 h->pid ? now - h->start_ms : (h->start_ms > now ? h->start_ms - now : 0));
		resp_str(out, b);
		resp_str(out, "retry-num");
		snprintf(b, sizeof(b), "%d", h->retries);
		resp_str(out, b);
	}
}
