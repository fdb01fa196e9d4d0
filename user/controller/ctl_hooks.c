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
 * sets the two times, as Sentinel's. Its own records (script_retry, script_failed,
 * script_dropped) go to the log function it was given (the event outbox's). */
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
#include "controller/ctl_conn.h"

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

/* The module's state (c->hooks). */
struct ctl_hooks {
	struct hook *queue; /* in order */
	int nqueued, nrunning;
	struct event *sigchld_ev, *tick_ev;
	struct ctl *ctl;
	void (*log)(struct ctl *c, struct evrec *r); /* its records: script_retry … */
	int max_runtime_ms;			     /* SENTINEL_SCRIPT_MAX_RUNTIME */
	int retry_delay_ms;			     /* SENTINEL_SCRIPT_RETRY_DELAY */
};

int ctl_hooks_init(struct ctl *c, void (*log)(struct ctl *c, struct evrec *r))
{
	struct ctl_hooks *H = calloc(1, sizeof(*H));

	if (!H)
		return -ENOMEM;
	H->ctl = c;
	H->log = log;
	H->max_runtime_ms = 60000;
	H->retry_delay_ms = 30000;
	c->hooks = H;
	return 0;
}

void ctl_hooks_set_times(struct ctl *c, int runtime_ms, int retry_ms)
{
	if (runtime_ms > 0)
		c->hooks->max_runtime_ms = runtime_ms;
	if (retry_ms >= 0)
		c->hooks->retry_delay_ms = retry_ms;
}

int ctl_hooks_max_runtime_ms(const struct ctl *c)
{
	return c->hooks->max_runtime_ms;
}

int ctl_hooks_retry_delay_ms(const struct ctl *c)
{
	return c->hooks->retry_delay_ms;
}

static void hook_free(struct hook *h)
{
	for (int i = 0; i < h->argc; i++)
		free(h->argv[i]);
	free(h);
}

static void unlink_hook(struct ctl_hooks *H, struct hook *h)
{
	for (struct hook **p = &H->queue; *p; p = &(*p)->next) {
		if (*p == h) {
			*p = h->next;
			H->nqueued--;
			return;
		}
	}
}

static void log_hook(struct ctl_hooks *H, const char *kind, const struct hook *h, const char *why)
{
	struct evrec r;

	evrec_begin(&r, NULL, "controller", kind);
	evrec_str(&r, "script", h->argv[0]);
	evrec_str(&r, "arg1", h->argc > 1 ? h->argv[1] : "");
	evrec_int(&r, "retries", h->retries);
	evrec_str(&r, "reason", why);
	H->log(H->ctl, &r);
}

static void start_hook(struct ctl_hooks *H, struct hook *h)
{
	pid_t pid = fork();

	if (pid < 0) {
		h->start_ms = fl_mono_ms() + H->retry_delay_ms;
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
	H->nrunning++;
}

static void run_ready(struct ctl_hooks *H)
{
	long long now = fl_mono_ms();

	for (struct hook *h = H->queue; h && H->nrunning < HOOK_MAX_RUNNING; h = h->next)
		if (!h->pid && h->start_ms <= now)
			start_hook(H, h);
}

static void finished(struct ctl_hooks *H, struct hook *h, int status)
{
	bool retry = (WIFEXITED(status) && WEXITSTATUS(status) == 1) || WIFSIGNALED(status);
	char why[64];

	H->nrunning--;
	h->pid = 0;
	if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		unlink_hook(H, h);
		hook_free(h);
		return;
	}
	if (WIFSIGNALED(status))
		snprintf(why, sizeof(why), "killed by signal %d", WTERMSIG(status));
	else
		snprintf(why, sizeof(why), "exit code %d", WEXITSTATUS(status));
	if (retry && h->retries + 1 < HOOK_MAX_RUNS) {
		h->retries++;
		h->start_ms = fl_mono_ms() + H->retry_delay_ms;
		log_hook(H, "script_retry", h, why);
		return;
	}
	log_hook(H, "script_failed", h, why);
	unlink_hook(H, h);
	hook_free(h);
}

static void on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	struct ctl_hooks *H = arg;
	int status;
	pid_t pid;

	(void)sig;
	(void)what;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (struct hook *h = H->queue; h; h = h->next) {
			if (h->pid == pid) {
				finished(H, h, status);
				break;
			}
		}
	}
	run_ready(H);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct ctl_hooks *H = arg;
	long long now = fl_mono_ms();

	(void)fd;
	(void)what;
	for (struct hook *h = H->queue; h; h = h->next) {
		if (h->pid > 0 && now - h->start_ms > H->max_runtime_ms) {
			pr_warn("%s ran for more than %d ms: killed\n", h->argv[0],
				H->max_runtime_ms);
			kill(h->pid, SIGKILL); /* reaped on SIGCHLD, retried as a signal */
		}
	}
	run_ready(H);
}

int ctl_hooks_start(struct ctl *c)
{
	const struct timeval tv = {0, 100000}; /* Sentinel's timer: 10 Hz */
	struct ctl_hooks *H = c->hooks;

	if (!c->cfg->controller.notification_script[0] &&
	    !c->cfg->controller.client_reconfig_script[0])
		return 0;
	H->sigchld_ev = evsignal_new(c->base, SIGCHLD, on_sigchld, H);
	H->tick_ev = event_new(c->base, -1, EV_PERSIST, on_tick, H);
	if (!H->sigchld_ev || !H->tick_ev || evsignal_add(H->sigchld_ev, NULL) ||
	    event_add(H->tick_ev, &tv))
		return -ENOMEM;
	return 0;
}

void ctl_hooks_stop(struct ctl *c)
{
	struct ctl_hooks *H = c->hooks;

	if (!H)
		return;
	while (H->queue) {
		struct hook *h = H->queue;

		H->queue = h->next;
		hook_free(h);
	}
	H->nqueued = H->nrunning = 0;
	if (H->sigchld_ev)
		event_free(H->sigchld_ev);
	if (H->tick_ev)
		event_free(H->tick_ev);
	free(H);
	c->hooks = NULL;
}

static void schedule(struct ctl_hooks *H, const char *script, int argc, const char **args)
{
	struct hook *h, **tail;

	if (H->nqueued >= HOOK_MAX_QUEUE) { /* drop the oldest not running, as Sentinel */
		for (h = H->queue; h && h->pid; h = h->next)
			;
		if (!h) {
			pr_warn("script queue full: %s %s not run\n", script, argc ? args[0] : "");
			return;
		}
		log_hook(H, "script_dropped", h, "queue full");
		unlink_hook(H, h);
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
	for (tail = &H->queue; *tail; tail = &(*tail)->next)
		;
	*tail = h;
	H->nqueued++;
	run_ready(H);
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

	if (!c->hooks)
		return; /* stopped */
	if (ns[0] && notified(channel)) {
		const char *args[] = {channel, msg};

		schedule(c->hooks, ns, 2, args);
	}
	if (rs[0] && !strcmp(channel, "+switch-master")) {
		char name[256], oip[64], op[16], nip[64], np[16];

		if (sscanf(msg, "%255s %63s %15s %63s %15s", name, oip, op, nip, np) == 5) {
			const char *args[] = {name, "leader", "start", oip, op, nip, np};

			schedule(c->hooks, rs, 7, args);
		}
	}
}

void ctl_hooks_run(struct ctl *c, const char *script, int argc, const char **args)
{
	if (c->hooks && script && script[0])
		schedule(c->hooks, script, argc, args);
}

int ctl_hooks_running(const struct ctl *c)
{
	return c->hooks->nrunning;
}

int ctl_hooks_queued(const struct ctl *c)
{
	return c->hooks->nqueued;
}

/* SENTINEL PENDING-SCRIPTS: one map per script, as Sentinel. */
void ctl_hooks_pending(const struct ctl_conn *k, struct evbuffer *out)
{
	const struct ctl_hooks *H = k->ctl->hooks;
	long long now = fl_mono_ms();
	char b[32];

	resp_array(out, H->nqueued);
	for (struct hook *h = H->queue; h; h = h->next) {
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
