/* sim/sim_conn.c — one accepted connection: non-blocking reads into a buffer, requests parsed
 * from it one at a time (keep-alive, pipelining), writes queued and flushed as the socket
 * allows, TLS through OpenSSL when enabled. Connections are never freed inside an event:
 * sim_conn_kill() marks them and sim_conn_reap() closes them after the event batch. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "sim/sim.h"

#define READ_CHUNK 16384

int sim_conn_accept(struct sim_server *srv, int fd)
{
	struct sim_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* frames go out as written */
	c->srv = srv;
	c->fd = fd;
	c->id = ++srv->next_conn_id;
	if (srv->ssl_ctx) {
		c->ssl = SSL_new(srv->ssl_ctx);
		if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
			SSL_free(c->ssl);
			free(c);
			close(fd);
			return -1;
		}
		SSL_set_accept_state(c->ssl);
	} else {
		c->handshake_done = 1;
	}
	if (sim_server_watch(srv, c, EPOLLIN | EPOLLRDHUP)) {
		SSL_free(c->ssl);
		free(c);
		close(fd);
		return -1;
	}
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->n_conns++;
	srv->accepted_total++;
	if (sim_fault_on_accept(srv, c))
		sim_conn_kill(c, 0); /* close-after-accept: nothing read, closed after this batch */
	return 0;
}

void sim_conn_kill(struct sim_conn *c, int reset)
{
	if (c->dead)
		return;
	c->dead = 1;
	c->reset = reset;
	epoll_ctl(c->srv->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	c->dead_next = c->srv->dead;
	c->srv->dead = c;
}

static void set_out_interest(struct sim_conn *c, int want_out)
{
	uint32_t ev = EPOLLIN | EPOLLRDHUP | (want_out ? EPOLLOUT : 0);
	if (ev != c->events && !c->dead)
		sim_server_watch(c->srv, c, ev);
}

int sim_conn_flush(struct sim_conn *c)
{
	if (c->dead)
		return -1;
	while (c->out_off < c->out.len) {
		size_t left = c->out.len - c->out_off;
		ssize_t n;
		if (c->ssl) {
			ERR_clear_error();
			int w = SSL_write(c->ssl, c->out.data + c->out_off, left > 1 << 30 ? 1 << 30 : (int)left);
			if (w <= 0) {
				int e = SSL_get_error(c->ssl, w);
				if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
					set_out_interest(c, 1);
					return 0;
				}
				sim_conn_kill(c, 0);
				return -1;
			}
			n = w;
		} else {
			n = send(c->fd, c->out.data + c->out_off, left, MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					set_out_interest(c, 1);
					return 0;
				}
				sim_conn_kill(c, 0);
				return -1;
			}
		}
		c->out_off += (size_t)n;
	}
	c->out.len = c->out_off = 0;
	if (c->out.cap > (1u << 16))
		ls_strbuf_free(&c->out); /* a big reply is over: give the memory back */
	set_out_interest(c, 0);
	if (c->close_after_flush)
		sim_conn_kill(c, 0);
	return 0;
}

int sim_conn_send(struct sim_conn *c, const void *data, size_t len)
{
	if (c->dead)
		return -1;
	if (c->out_off && c->out_off == c->out.len)
		c->out.len = c->out_off = 0;
	if (ls_strbuf_append(&c->out, data, len)) {
		sim_conn_kill(c, 0);
		return -1;
	}
	/* While EPOLLOUT is pending the socket is full: queue, the event will flush. */
	if (c->events & EPOLLOUT)
		return 0;
	return sim_conn_flush(c);
}

void sim_conn_reply(struct sim_conn *c, struct ls_strbuf *out, int build_rc, int keep_alive)
{
	if (!keep_alive)
		c->close_after_flush = 1;
	if (!build_rc)
		sim_conn_send(c, out->data, out->len);
	else
		sim_conn_kill(c, 0); /* a reply we could not build: cut rather than send half */
	ls_strbuf_free(out);
}

void sim_conn_process_input(struct sim_conn *c)
{
	const struct sim_config *cfg = c->srv->cfg;
	while (!c->dead && !c->req && !c->close_after_flush && c->in.len > 0) {
		struct sim_http_req h;
		int head = sim_http_parse(c->in.data, c->in.len, cfg->max_header_bytes, &h);
		if (head == SIM_HTTP_INCOMPLETE)
			return;
		if (head == SIM_HTTP_ERROR) {
			sim_api_send_error(c, h.status, h.status == 431 ? "RequestHeaderFieldsTooLarge" : "BadRequestError",
					   h.error, 0);
			return;
		}
		if (h.chunked) {
			sim_api_send_error(c, 400, "BadRequestError",
					   "chunked request bodies are not supported: send Content-Length", 0);
			return;
		}
		size_t body = h.content_length > 0 ? (size_t)h.content_length : 0;
		if (h.content_length > 0 && (uint64_t)h.content_length > cfg->max_body_bytes) {
			char msg[128];
			snprintf(msg, sizeof(msg), "request body of %lld bytes is over the limit of %zu (--max-body-bytes)",
				 (long long)h.content_length, cfg->max_body_bytes);
			sim_api_send_error(c, 413, "PayloadTooLargeError", msg, 0);
			return;
		}
		if (c->in.len - (size_t)head < body) {
			if (h.expect_continue && !c->sent_continue) {
				static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
				c->sent_continue = 1;
				sim_conn_send(c, cont, sizeof(cont) - 1);
			}
			return;
		}
		c->sent_continue = 0;
		sim_api_dispatch(c, &h, c->in.data + head, body);
		ls_strbuf_consume(&c->in, (size_t)head + body);
		if (!c->in.len && c->in.cap > (1u << 16))
			ls_strbuf_free(&c->in);
	}
}

/* Reads what the socket has. Returns 0, or -1 when the connection is done for. Reads go
 * through one shared buffer so an idle connection holds no read buffer of its own (5,000
 * connections x 16 KiB would be 80 MiB for nothing). */
static int read_some(struct sim_conn *c)
{
	static char rbuf[READ_CHUNK];
	const struct sim_config *cfg = c->srv->cfg;
	size_t cap = cfg->max_header_bytes + cfg->max_body_bytes + READ_CHUNK;
	for (;;) {
		if (c->in.len >= cap)
			return 0; /* parse what we have first; a request that big is refused there */
		ssize_t n;
		if (c->ssl) {
			ERR_clear_error();
			int r = SSL_read(c->ssl, rbuf, READ_CHUNK);
			if (r <= 0) {
				int e = SSL_get_error(c->ssl, r);
				if (e == SSL_ERROR_WANT_READ)
					return 0;
				if (e == SSL_ERROR_WANT_WRITE) {
					set_out_interest(c, 1);
					return 0;
				}
				return -1; /* close_notify, EOF or error */
			}
			n = r;
		} else {
			n = recv(c->fd, rbuf, READ_CHUNK, 0);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (n <= 0)
				return -1;
		}
		if (ls_strbuf_append(&c->in, rbuf, (size_t)n))
			return -1;
		if ((size_t)n < READ_CHUNK && !c->ssl)
			return 0; /* short read: the socket is drained */
	}
}

static int handshake(struct sim_conn *c)
{
	ERR_clear_error();
	int r = SSL_do_handshake(c->ssl);
	if (r == 1) {
		c->handshake_done = 1;
		return 0;
	}
	int e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ) {
		set_out_interest(c, 0);
		return 1;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		set_out_interest(c, 1);
		return 1;
	}
	return -1;
}

void sim_conn_on_event(struct sim_conn *c, uint32_t events)
{
	if (c->dead)
		return;
	if (events & EPOLLERR) {
		sim_conn_kill(c, 0);
		return;
	}
	if (!c->handshake_done) {
		int h = handshake(c);
		if (h < 0) {
			sim_conn_kill(c, 0);
			return;
		}
		if (h > 0)
			return;
	}
	if ((events & EPOLLOUT) && sim_conn_flush(c) < 0)
		return;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
		if (read_some(c) < 0) {
			sim_conn_kill(c, 0); /* the client closed: a live request fails client_closed */
			return;
		}
		sim_conn_process_input(c);
		if (!c->dead && c->req && c->in.len >= c->srv->cfg->max_header_bytes + c->srv->cfg->max_body_bytes)
			sim_conn_kill(c, 0); /* pipelining more than a request's worth while streaming */
	}
}

static void free_conn(struct sim_server *srv, struct sim_conn *c)
{
	if (c->req)
		sim_stream_abort(srv, c->req, srv->stop ? "server_shutdown" : "client_closed");
	if (c->reset) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	} else if (c->ssl && c->handshake_done) {
		ERR_clear_error();
		SSL_shutdown(c->ssl); /* best effort close_notify; never wait */
	}
	SSL_free(c->ssl);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->n_conns--;
	ls_strbuf_free(&c->in);
	ls_strbuf_free(&c->out);
	free(c);
}

void sim_conn_reap(struct sim_server *srv)
{
	while (srv->dead) {
		struct sim_conn *c = srv->dead;
		srv->dead = c->dead_next;
		free_conn(srv, c);
	}
}

void sim_conn_close_all(struct sim_server *srv)
{
	for (struct sim_conn *c = srv->conns; c; c = c->next)
		sim_conn_kill(c, 0);
	sim_conn_reap(srv);
}
