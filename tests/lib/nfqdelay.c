// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* nfqdelay: holds every packet of an NFQUEUE for a delay, then accepts it — a delayed
 * link where the kernel has no netem (tests and the campaign: cl_delay in
 * tests/lib/cluster.sh). Runs in the namespace whose nftables rule queues to it:
 *
 *   nfqdelay -q NUM -d MS [-j MS] [-s SEED]
 *
 * Each packet is accepted MS (± up to the jitter, uniform) after it arrived; a
 * packet whose delay would reorder it behind a later one keeps its own time (links
 * reorder under jitter too). The queue fails open (a full queue passes packets) and
 * the rule should say `bypass`, so a holder that dies leaves the link up.
 * SIGTERM/SIGINT accept what is held and stop. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define HELD_MAX 65536

struct held {
	uint32_t id;
	int64_t due_ns;
};

static struct held held[HELD_MAX];
static int nheld;
static int64_t delay_ns, jitter_ns;
static volatile sig_atomic_t stop;
static struct nfq_q_handle *qh;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int on_packet(struct nfq_q_handle *q, struct nfgenmsg *msg, struct nfq_data *d, void *u)
{
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(d);
	int64_t due;

	(void)msg;
	(void)u;
	if (!ph)
		return 0;
	due = now_ns() + delay_ns;
	if (jitter_ns)
		due += (int64_t)(((double)random() / RAND_MAX * 2 - 1) * (double)jitter_ns);
	if (nheld == HELD_MAX) /* full: this one goes at once */
		return nfq_set_verdict(q, ntohl(ph->packet_id), NF_ACCEPT, 0, NULL);
	held[nheld].id = ntohl(ph->packet_id);
	held[nheld].due_ns = due;
	nheld++;
	return 0;
}

/* Accepts every held packet that is due (all of them with force); returns the ms to
 * the next one due, -1 when none is held. */
static int release(int force)
{
	int64_t t = now_ns(), next = INT64_MAX;
	int j = 0;

	for (int i = 0; i < nheld; i++) {
		if (force || held[i].due_ns <= t) {
			nfq_set_verdict(qh, held[i].id, NF_ACCEPT, 0, NULL);
			continue;
		}
		if (held[i].due_ns < next)
			next = held[i].due_ns;
		held[j++] = held[i];
	}
	nheld = j;
	if (!nheld)
		return -1;
	return (int)((next - t + 999999) / 1000000);
}

static long num(const char *opt, const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "nfqdelay: %s %s: not a number in 0-%ld\n", opt, s, max);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	long queue = -1, delay = -1, jitter = 0, seed = (long)getpid();
	struct nfq_handle *h;
	char buf[65536] __attribute__((aligned));
	int c, fd;

	while ((c = getopt(argc, argv, "q:d:j:s:")) != -1) {
		switch (c) {
		case 'q':
			queue = num("-q", optarg, 65535);
			break;
		case 'd':
			delay = num("-d", optarg, 60000);
			break;
		case 'j':
			jitter = num("-j", optarg, 60000);
			break;
		case 's':
			seed = num("-s", optarg, 0x7fffffff);
			break;
		default:
			fprintf(stderr, "usage: nfqdelay -q NUM -d MS [-j MS] [-s SEED]\n");
			return 2;
		}
	}
	if (queue < 0 || delay < 0 || optind != argc) {
		fprintf(stderr, "usage: nfqdelay -q NUM -d MS [-j MS] [-s SEED]\n");
		return 2;
	}
	srandom((unsigned)seed);
	delay_ns = delay * 1000000;
	jitter_ns = jitter > delay ? delay * 1000000 : jitter * 1000000;
	h = nfq_open();
	if (!h) {
		fprintf(stderr, "nfqdelay: nfq_open: %s\n", strerror(errno));
		return 1;
	}
	qh = nfq_create_queue(h, (uint16_t)queue, on_packet, NULL);
	if (!qh) {
		fprintf(stderr, "nfqdelay: queue %ld: %s (another holder on it?)\n", queue,
			strerror(errno));
		return 1;
	}
	if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(qh, HELD_MAX) < 0 ||
	    nfq_set_queue_flags(qh, NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN) < 0) {
		fprintf(stderr, "nfqdelay: configuring queue %ld: %s\n", queue, strerror(errno));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	fd = nfq_fd(h);
	printf("nfqdelay: queue %ld, delay %ld ms, jitter %ld ms\n", queue, delay, jitter);
	fflush(stdout);
	while (!stop) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int wait = release(0), n;

		if (poll(&p, 1, wait) < 0 && errno != EINTR)
			break;
		if (!(p.revents & POLLIN))
			continue;
		n = (int)recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			nfq_handle_packet(h, buf, n);
		else if (n < 0 && errno == ENOBUFS)
			fprintf(stderr, "nfqdelay: the kernel dropped queue messages (ENOBUFS)\n");
	}
	release(1);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;
}
