// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The state file, written off the event loop (single-controller mode). After a
 * promotion the loop only formats the text and hands it over; a worker thread writes
 * it (write, fsync, rename, fsync of the directory: fo_state_write), so the DNS update
 * and the repoints are not held up by the disk. The newest text wins: one still
 * waiting is replaced. A write that fails is retried every second until one succeeds,
 * and `flatline status` shows the failure meanwhile. At a clean stop the last text is
 * written before the process exits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/log.h"
#include "controller/ctl.h"

#define CTL_STATE_RETRY_MS 1000

struct ctl_state_writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char path[256];
	char *pending; /* the text to write next, NULL if none */
	size_t pending_len;
	bool stop;
	bool busy;     /* the thread is writing (without the lock) */
	char err[512]; /* the last failure, "" after a success */
	unsigned long long writes, failures;
};

static void *writer_main(void *arg)
{
	struct ctl_state_writer *w = arg;
	char *buf = NULL, err[512];
	size_t len = 0;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		if (w->pending) { /* newer than a failed one we hold */
			free(buf);
			buf = w->pending;
			len = w->pending_len;
			w->pending = NULL;
		}
		if (!buf) {
			if (w->stop)
				break;
			pthread_cond_wait(&w->cv, &w->mu);
			continue;
		}
		w->busy = true;
		pthread_mutex_unlock(&w->mu);
		err[0] = '\0';
		int rc = fo_state_write(w->path, buf, len, err, sizeof(err));
		pthread_mutex_lock(&w->mu);
		w->busy = false;
		pthread_cond_broadcast(&w->cv);
		if (!rc) {
			free(buf);
			buf = NULL;
			w->writes++;
			if (w->err[0])
				pr_info("state file %s written again\n", w->path);
			w->err[0] = '\0';
			continue;
		}
		w->failures++;
		if (strcmp(w->err, err))
			pr_warn("%s (retrying every %d ms)\n", err, CTL_STATE_RETRY_MS);
		snprintf(w->err, sizeof(w->err), "%s", err);
		if (w->stop && !w->pending)
			break; /* stopping: the failure was said; nothing more to try */
		if (!w->pending) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += CTL_STATE_RETRY_MS / 1000;
			pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		}
	}
	pthread_mutex_unlock(&w->mu);
	free(buf);
	return NULL;
}

int ctl_state_start(struct ctl *c)
{
	struct ctl_state_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	snprintf(w->path, sizeof(w->path), "%s", c->state_file);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thread, NULL, writer_main, w)) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
		pr_warn("failed to start the state file writer\n");
		return -EAGAIN;
	}
	c->state_writer = w;
	return 0;
}

void ctl_state_save(struct ctl *c)
{
	struct ctl_state_writer *w = c->state_writer;
	size_t len;
	char *buf;

	if (!w)
		return;
	buf = fo_state_format(&c->fo, &len);
	if (!buf) {
		pr_warn("failed to write the state file: out of memory\n");
		return;
	}
	pthread_mutex_lock(&w->mu);
	free(w->pending);
	w->pending = buf;
	w->pending_len = len;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

int ctl_state_write_now(struct ctl *c, const char *buf, size_t len, char *err, size_t errlen)
{
	struct ctl_state_writer *w = c->state_writer;
	int rc;

	if (!w)
		return fo_state_write(c->state_file, buf, len, err, errlen);
	pthread_mutex_lock(&w->mu);
	while (w->busy) /* an older text being written: it must not land after ours */
		pthread_cond_wait(&w->cv, &w->mu);
	free(w->pending); /* ours holds everything it did */
	w->pending = NULL;
	rc = fo_state_write(w->path, buf, len, err, errlen);
	if (!rc)
		w->writes++;
	pthread_mutex_unlock(&w->mu);
	return rc;
}

bool ctl_state_error(struct ctl *c, char *buf, size_t len)
{
	struct ctl_state_writer *w = c->state_writer;
	bool failing;

	if (!w)
		return false;
	pthread_mutex_lock(&w->mu);
	failing = w->err[0] != '\0';
	snprintf(buf, len, "%s", w->err);
	pthread_mutex_unlock(&w->mu);
	return failing;
}

void ctl_state_stop(struct ctl *c)
{
	struct ctl_state_writer *w = c->state_writer;

	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	free(w->pending);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w);
	c->state_writer = NULL;
}
