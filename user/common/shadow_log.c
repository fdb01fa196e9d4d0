// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Sentinel's log lines and flatline's events as one record, and the faults they
 * make (shadow_log.h); `flatline shadow-report` (cli/shadow_report_cmd.c) reads
 * the files and prints. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/event_log.h"
#include "common/shadow_log.h"

static int month_of(const char *m)
{
	static const char *const names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

	for (int i = 0; i < 12; i++)
		if (!strcmp(m, names[i]))
			return i;
	return -1;
}

static void hostport(char *out, size_t len, const char *ip, const char *port)
{
	snprintf(out, len, "%s:%s", ip, port);
}

/* A decimal number at *p followed by sep (' ' also eats further blanks); *p past it. */
static bool field(const char **p, int *out, char sep)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v > 1000000000 || *end != sep)
		return false;
	*out = (int)v;
	*p = end + 1;
	while (sep == ' ' && **p == ' ')
		(*p)++;
	return true;
}

int sl_parse_sentinel(const char *line, struct sl_event *e)
{
	char mon[8], ev[32], a[5][64];
	int pid, day, year, hh, mm, ss, ms, off, na;
	const char *p = line;
	struct tm tm = {0};
	time_t t;

	memset(e, 0, sizeof(*e));
	/* "PID:R DD Mon YYYY HH:MM:SS.mmm L rest" (Sentinel's serverLog) */
	if (!field(&p, &pid, ':') || !p[0] || p[1] != ' ')
		return 0;
	p += 2;
	if (!field(&p, &day, ' ') || strlen(p) < 4 || p[3] != ' ')
		return 0;
	memcpy(mon, p, 3);
	mon[3] = '\0';
	p += 4;
	if (!field(&p, &year, ' ') || !field(&p, &hh, ':') || !field(&p, &mm, ':') ||
	    !field(&p, &ss, '.') || !field(&p, &ms, ' ') || !p[0] || p[1] != ' ')
		return 0;
	off = (int)(p + 2 - line);
	(void)pid;
	tm.tm_mon = month_of(mon);
	if (tm.tm_mon < 0)
		return 0;
	tm.tm_mday = day;
	tm.tm_year = year - 1900;
	tm.tm_hour = hh;
	tm.tm_min = mm;
	tm.tm_sec = ss;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return 0;
	e->ts_ms = (long long)t * 1000 + ms;
	na = sscanf(line + off, "%31s %63s %63s %63s %63s %63s", ev, a[0], a[1], a[2], a[3], a[4]);
	if (na < 1)
		return 0;
	if ((!strcmp(ev, "+sdown") || !strcmp(ev, "+odown")) && na >= 5 &&
	    !strcmp(a[0], "master")) {
		e->kind = ev[1] == 's' ? SL_S_SDOWN : SL_S_ODOWN;
		snprintf(e->master, sizeof(e->master), "%s", a[1]);
		hostport(e->addr, sizeof(e->addr), a[2], a[3]);
		return 1;
	}
	if (!strcmp(ev, "+switch-master") && na == 6) {
		e->kind = SL_S_SWITCH;
		snprintf(e->master, sizeof(e->master), "%s", a[0]);
		hostport(e->addr, sizeof(e->addr), a[1], a[2]);
		hostport(e->chosen, sizeof(e->chosen), a[3], a[4]);
		return 1;
	}
	if (!strcmp(ev, "+promoted-slave") && na == 6 && !strcmp(a[0], "slave")) {
		/* slave <ip:port> <ip> <port> @ <name> <mip> <mport> */
		char name[64], mip[64], mport[16];

		if (sscanf(line + off, "%*s %*s %*s %*s %*s @ %63s %63s %15s", name, mip, mport) !=
		    3)
			return 0;
		e->kind = SL_S_PROMOTED;
		snprintf(e->master, sizeof(e->master), "%s", name);
		hostport(e->addr, sizeof(e->addr), mip, mport);
		hostport(e->chosen, sizeof(e->chosen), a[2], a[3]);
		return 1;
	}
	return 0;
}

static void cp(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

int sl_parse_flatline(const char *line, size_t len, struct sl_event *e)
{
	static struct evline ev;
	const char *kind, *ts, *inst, *from;
	int64_t us;

	memset(e, 0, sizeof(*e));
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (evline_parse(&ev, line, len) || !(kind = evline_get(&ev, "kind")) ||
	    !(ts = evline_get(&ev, "ts")) || evlog_parse_ts(ts, &us))
		return 0;
	inst = evline_get(&ev, "instance");
	from = evline_get(&ev, "from");
	if (!strcmp(kind, "node_down") && inst) {
		e->kind = SL_F_DOWN;
		cp(e->node, sizeof(e->node), inst);
	} else if (!strcmp(kind, "would_failover") && from) {
		e->kind = SL_F_WOULD_FAILOVER;
		cp(e->node, sizeof(e->node), from);
		cp(e->reason, sizeof(e->reason), evline_get(&ev, "reason"));
	} else if ((!strcmp(kind, "would_promote") || !strcmp(kind, "primary_followed") ||
		    !strcmp(kind, "promoted")) &&
		   from && inst) {
		e->kind = !strcmp(kind, "would_promote")      ? SL_F_WOULD_PROMOTE
			  : !strcmp(kind, "primary_followed") ? SL_F_FOLLOWED
							      : SL_F_PROMOTED;
		cp(e->node, sizeof(e->node), from);
		cp(e->chosen_node, sizeof(e->chosen_node), inst);
	} else {
		return 0;
	}
	e->ts_ms = us / 1000;
	cp(e->master, sizeof(e->master), evline_get(&ev, "shard"));
	cp(e->addr, sizeof(e->addr), e->node);
	cp(e->chosen, sizeof(e->chosen), e->chosen_node);
	return 1;
}

static int by_time(const void *a, const void *b)
{
	const struct sl_event *x = a, *y = b;

	return x->ts_ms < y->ts_ms ? -1 : x->ts_ms > y->ts_ms;
}

static void first(long long *at, long long t)
{
	if (!*at || t < *at)
		*at = t;
}

static struct sl_fault *fault_for(struct sl_fault *out, int nf, const struct sl_event *e,
				  const long long *t0, long long window_ms)
{
	for (int i = nf - 1; i >= 0; i--)
		if (!strcmp(out[i].addr, e->addr) && e->ts_ms - t0[i] <= window_ms &&
		    e->ts_ms - t0[i] >= -window_ms)
			return &out[i];
	return NULL;
}

int sl_faults(struct sl_event *ev, int n, long long window_ms, struct sl_fault *out, int max)
{
	long long t0[max > 0 ? max : 1];
	int nf = 0;

	qsort(ev, n, sizeof(*ev), by_time);
	/* The failures of a primary: everything but node_down (any node's). */
	for (int i = 0; i < n; i++) {
		const struct sl_event *e = &ev[i];
		struct sl_fault *f;

		if (e->kind == SL_F_DOWN || e->kind == SL_NONE)
			continue;
		f = fault_for(out, nf, e, t0, window_ms);
		if (!f) {
			if (nf >= max)
				continue;
			f = &out[nf];
			memset(f, 0, sizeof(*f));
			t0[nf++] = e->ts_ms;
			cp(f->addr, sizeof(f->addr), e->addr);
		}
		if (!f->master[0] || e->kind <= SL_S_SWITCH)
			cp(f->master, sizeof(f->master), e->master);
		switch (e->kind) {
		case SL_S_SDOWN:
			first(&f->s_sdown_ms, e->ts_ms);
			break;
		case SL_S_ODOWN:
			first(&f->s_odown_ms, e->ts_ms);
			break;
		case SL_S_PROMOTED:
		case SL_S_SWITCH:
			/* The leader's +promoted-slave, else the first +switch-master. */
			if (e->kind == SL_S_SWITCH)
				first(&f->s_switch_ms, e->ts_ms);
			if (!f->s_chosen[0])
				cp(f->s_chosen, sizeof(f->s_chosen), e->chosen);
			break;
		case SL_F_WOULD_FAILOVER:
			first(&f->f_would_ms, e->ts_ms);
			cp(f->f_reason, sizeof(f->f_reason), e->reason);
			break;
		case SL_F_WOULD_PROMOTE:
		case SL_F_PROMOTED:
			first(&f->f_promote_ms, e->ts_ms);
			if (!f->f_chosen[0])
				cp(f->f_chosen, sizeof(f->f_chosen), e->chosen);
			break;
		case SL_F_FOLLOWED:
			first(&f->f_followed_ms, e->ts_ms);
			cp(f->f_followed, sizeof(f->f_followed), e->chosen);
			break;
		default:
			break;
		}
	}
	/* flatline's first sight of each: the node_down of that server just before. */
	for (int i = 0; i < n; i++) {
		const struct sl_event *e = &ev[i];
		struct sl_fault *f;

		if (e->kind != SL_F_DOWN)
			continue;
		f = fault_for(out, nf, e, t0, window_ms);
		if (f && !f->f_down_ms)
			f->f_down_ms = e->ts_ms;
	}
	return nf;
}
