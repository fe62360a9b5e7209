/* lab/lab_delay.c — the forwarder: one thread moves every IP packet between the two TUN fds
 * after the one-way delay. Timing follows docs/delay-line.md: timer slack 1 ns, the
 * hold measured from the kernel's stamp of the packet (not from our own late wake-up), sleep
 * until ~100 us before the due time and busy-wait the rest, SCHED_FIFO where allowed. */
#include <errno.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "lab/lab.h"

#define STAMP_RING   1024   /* kernel stamps waiting for their packet, per direction */
#define STAMP_SEARCH 16     /* how far ahead a packet looks for its stamp */
#define READ_BURST   64     /* packets read per fd per wake-up before releasing again */
#define PUBLISH_NS   100000000ull

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void publish(struct lab_delay *d, uint64_t started_ns, uint64_t cpu0)
{
	d->local.cpu_ns = thread_cpu_ns() - cpu0;
	d->local.wall_ns = ls_now_ns() - started_ns;
	pthread_mutex_lock(&d->lock);
	d->published = d->local;
	pthread_mutex_unlock(&d->lock);
}

/* Kernel stamps of packets the namespace on `dir`'s side handed to its TUN (SO_TIMESTAMPNS is
 * CLOCK_REALTIME: turned into CLOCK_MONOTONIC through the packet's age). */
static void drain_stamps(struct lab_delay *d, int dir)
{
	uint8_t ctrl[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(struct tpacket_auxdata))];
	for (int i = 0; i < READ_BURST * 4; i++) {
		struct lab_stamp s;
		struct iovec iov = { .iov_base = s.head, .iov_len = sizeof(s.head) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl,
				      .msg_controllen = sizeof(ctrl) };
		ssize_t r = recvmsg(d->stamp_fd[dir], &msg, MSG_DONTWAIT);
		if (r < 0)
			return;
		uint64_t mono = ls_now_ns(), real = realtime_ns(), stamp_real = 0;
		uint32_t len = (uint32_t)r;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				stamp_real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			} else if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA) {
				/* the socket filter cut the packet to LAB_STAMP_BYTES: its length is here */
				struct tpacket_auxdata aux;
				memcpy(&aux, CMSG_DATA(c), sizeof(aux));
				len = aux.tp_len;
			}
		}
		uint64_t age = stamp_real && stamp_real < real ? real - stamp_real : 0;
		if (age > 1000000000ull) /* the wall clock jumped: our own time is the better guess */
			age = 0;
		s.sent_ns = mono - age;
		s.len = len;
		s.kept = (uint32_t)(r < (ssize_t)sizeof(s.head) ? r : (ssize_t)sizeof(s.head));
		if (d->stamp_n[dir] == STAMP_RING) { /* unmatched stamps (packets the TUN dropped) */
			d->stamp_head[dir] = (d->stamp_head[dir] + 1) % STAMP_RING;
			d->stamp_n[dir]--;
		}
		d->stamps[dir][(d->stamp_head[dir] + d->stamp_n[dir]) % STAMP_RING] = s;
		d->stamp_n[dir]++;
	}
}

/* The kernel stamp of the packet just read, else 0. Stamps ahead of the match belonged to
 * packets the TUN queue dropped: they go. */
static uint64_t match_stamp(struct lab_delay *d, int dir, const struct lab_pkt *p)
{
	uint32_t n = d->stamp_n[dir] < STAMP_SEARCH ? d->stamp_n[dir] : STAMP_SEARCH;
	for (uint32_t k = 0; k < n; k++) {
		const struct lab_stamp *s = &d->stamps[dir][(d->stamp_head[dir] + k) % STAMP_RING];
		if (s->len != p->len || memcmp(s->head, p->data, s->kept))
			continue;
		uint64_t sent = s->sent_ns;
		d->stamp_head[dir] = (d->stamp_head[dir] + k + 1) % STAMP_RING;
		d->stamp_n[dir] -= k + 1;
		return sent;
	}
	return 0;
}

static void drain_tun(struct lab_delay *d, int dir)
{
	uint8_t scratch[LAB_PKT_MAX]; /* a dropped packet still has to leave the TUN queue */
	struct lab_shape shape = d->cfg.shape;
	shape.one_way_ns = atomic_load_explicit(&d->one_way_ns, memory_order_relaxed);
	for (int i = 0; i < READ_BURST; i++) {
		struct lab_pkt *p = lab_fifo_tail(&d->q[dir]);
		uint8_t *buf = p ? p->data : scratch;
		ssize_t r = read(d->tun_fd[dir], buf, LAB_PKT_MAX);
		uint64_t now = ls_now_ns();
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR)
				d->local.drops_bad[dir]++;
			return;
		}
		if (r == 0 || r > LAB_MTU) {
			d->local.drops_bad[dir]++;
			continue;
		}
		if (!p) {
			d->local.drops_full[dir]++;
			continue;
		}
		p->len = (uint32_t)r;
		uint64_t stamp = match_stamp(d, dir, p);
		if (!stamp) { /* it came in after we drained the stamps: its stamp is queued by now */
			drain_stamps(d, dir);
			stamp = match_stamp(d, dir, p);
		}
		if (stamp && stamp <= now) {
			p->sent_ns = stamp;
			d->local.stamped++;
		} else {
			p->sent_ns = now;
			d->local.unstamped++;
		}
		lab_fifo_push(&d->q[dir], &shape, &d->rng);
	}
}

/* Writes every packet that is due, oldest due time first. */
static void release_due(struct lab_delay *d)
{
	for (;;) {
		struct lab_pkt *h0 = lab_fifo_head(&d->q[0]), *h1 = lab_fifo_head(&d->q[1]);
		int dir = !h1 || (h0 && h0->due_ns <= h1->due_ns) ? 0 : 1;
		struct lab_pkt *p = dir ? h1 : h0;
		uint64_t now = ls_now_ns();
		if (!p || p->due_ns > now)
			return;
		uint64_t late_us = (now - p->due_ns) / 1000;
		d->local.late_hist[late_us < LAB_LATE_BUCKETS ? late_us : LAB_LATE_BUCKETS - 1]++;
		if (write(d->tun_fd[1 - dir], p->data, p->len) == (ssize_t)p->len) {
			d->local.packets[dir]++;
			d->local.bytes[dir] += p->len;
		} else {
			d->local.drops_bad[dir]++;
		}
		lab_fifo_pop(&d->q[dir]);
	}
}

static uint64_t next_due(struct lab_delay *d)
{
	uint64_t next = UINT64_MAX;
	for (int dir = 0; dir < 2; dir++) {
		struct lab_pkt *h = lab_fifo_head(&d->q[dir]);
		if (h && h->due_ns < next)
			next = h->due_ns;
	}
	return next;
}

static void *forward_main(void *arg)
{
	struct lab_delay *d = arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (d->cfg.realtime) {
		struct sched_param sp = { .sched_priority = 10 };
		d->local.realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
	}
	uint64_t started = ls_now_ns(), cpu0 = thread_cpu_ns(), published_at = started;
	struct pollfd pfd[5] = {
		{ .fd = d->stop_fd, .events = POLLIN },
		{ .fd = d->stamp_fd[0], .events = POLLIN }, { .fd = d->stamp_fd[1], .events = POLLIN },
		{ .fd = d->tun_fd[0], .events = POLLIN },   { .fd = d->tun_fd[1], .events = POLLIN },
	};
	for (;;) {
		release_due(d);
		uint64_t next = next_due(d), now = ls_now_ns();
		if (next != UINT64_MAX && next <= now + d->cfg.spin_ns) {
			while (ls_now_ns() < next)
				__asm__ __volatile__("" ::: "memory");
			continue;
		}
		uint64_t wait = next == UINT64_MAX ? PUBLISH_NS : next - now - d->cfg.spin_ns;
		if (wait > PUBLISH_NS)
			wait = PUBLISH_NS;
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull),
				       .tv_nsec = (long)(wait % 1000000000ull) };
		int r = ppoll(pfd, 5, &ts, NULL);
		if (r < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		/* Stamps first: the kernel queues a packet's stamp before the packet itself. */
		drain_stamps(d, 0);
		drain_stamps(d, 1);
		drain_tun(d, 0);
		drain_tun(d, 1);
		if (ls_now_ns() - published_at > PUBLISH_NS) {
			publish(d, started, cpu0);
			published_at = ls_now_ns();
		}
	}
	publish(d, started, cpu0);
	return NULL;
}

int lab_delay_start(struct lab_delay *d, const struct lab_ns *ns, const struct lab_delay_cfg *cfg)
{
	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->stop_fd = -1;
	atomic_store(&d->one_way_ns, cfg->shape.one_way_ns);
	d->rng = cfg->seed;
	for (int dir = 0; dir < 2; dir++) {
		d->tun_fd[dir] = ns->tun_fd[dir];
		d->stamp_fd[dir] = ns->stamp_fd[dir];
		d->stamps[dir] = calloc(STAMP_RING, sizeof(struct lab_stamp));
		if (!d->stamps[dir] || lab_fifo_init(&d->q[dir], cfg->queue_pkts) < 0)
			goto fail;
	}
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->stop_fd < 0 || pthread_mutex_init(&d->lock, NULL)) {
		fprintf(stderr, "lab: forwarder setup: %s\n", strerror(errno));
		goto fail;
	}
	int err = pthread_create(&d->thread, NULL, forward_main, d);
	if (err) {
		fprintf(stderr, "lab: forwarder thread: %s\n", strerror(err));
		pthread_mutex_destroy(&d->lock);
		goto fail;
	}
	d->started = 1;
	return 0;
fail:
	for (int dir = 0; dir < 2; dir++) {
		free(d->stamps[dir]);
		d->stamps[dir] = NULL;
		lab_fifo_free(&d->q[dir]);
	}
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	d->stop_fd = -1;
	return -1;
}

void lab_delay_set_rtt(struct lab_delay *d, uint64_t rtt_ns)
{
	atomic_store(&d->one_way_ns, rtt_ns / 2);
}

void lab_delay_snapshot(struct lab_delay *d, struct lab_delay_stats *out)
{
	if (!d->started) { /* stopped (or never started): the final figures stay */
		*out = d->published;
		return;
	}
	pthread_mutex_lock(&d->lock);
	*out = d->published;
	pthread_mutex_unlock(&d->lock);
}

void lab_delay_stop(struct lab_delay *d)
{
	if (!d->started)
		return;
	uint64_t one = 1;
	if (write(d->stop_fd, &one, sizeof(one)) < 0)
		fprintf(stderr, "lab: stopping the forwarder: %s\n", strerror(errno));
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->lock);
	close(d->stop_fd);
	d->stop_fd = -1;
	for (int dir = 0; dir < 2; dir++) {
		free(d->stamps[dir]);
		d->stamps[dir] = NULL;
		lab_fifo_free(&d->q[dir]);
	}
	d->started = 0;
}

double lab_late_pct(const struct lab_delay_stats *s, double pct)
{
	uint64_t total = 0;
	for (int i = 0; i < LAB_LATE_BUCKETS; i++)
		total += s->late_hist[i];
	if (!total)
		return 0;
	uint64_t want = (uint64_t)((pct / 100.0) * (double)total);
	if (want >= total)
		want = total - 1;
	uint64_t seen = 0;
	for (int i = 0; i < LAB_LATE_BUCKETS; i++) {
		seen += s->late_hist[i];
		if (seen > want)
			return i;
	}
	return LAB_LATE_BUCKETS - 1;
}

void lab_delay_print(FILE *out, const struct lab_delay_stats *s)
{
	uint64_t held = s->stamped + s->unstamped;
	fprintf(out,
		"lab: forwarder moved %llu packets client->server, %llu server->client; dropped %llu "
		"(queue full) + %llu (bad); held from the kernel stamp for %.1f%%; written late by "
		"p50 %.0f us, p99 %.0f us; CPU %.1f%%%s\n",
		(unsigned long long)s->packets[0], (unsigned long long)s->packets[1],
		(unsigned long long)(s->drops_full[0] + s->drops_full[1]),
		(unsigned long long)(s->drops_bad[0] + s->drops_bad[1]),
		held ? 100.0 * (double)s->stamped / (double)held : 0.0, lab_late_pct(s, 50),
		lab_late_pct(s, 99), s->wall_ns ? 100.0 * (double)s->cpu_ns / (double)s->wall_ns : 0.0,
		s->realtime ? " (SCHED_FIFO)" : " (no SCHED_FIFO: holds may run late under load)");
}
