/* fuzz_file.h — for loaders that take a path: the input goes into an anonymous memory file and
 * the loader gets /proc/self/fd/N, so fuzzing touches no disk. Plus the token counter the
 * dataset targets give their loaders. */
#ifndef LATSCOPE_FUZZ_FILE_H
#define LATSCOPE_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the fd (the caller closes it) and fills path; -1 when the file cannot be made. */
static inline int fuzz_file(const unsigned char *data, size_t size, char *path, size_t path_len)
{
	int fd = memfd_create("latscope-fuzz", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	snprintf(path, path_len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The first byte selects what the target does, the rest is the file: fuzz_file of the rest,
 * or -1 when the input is empty or the file cannot be made. */
static inline int fuzz_sel_file(const unsigned char *data, size_t size, uint8_t *sel, char *path, size_t path_len)
{
	if (size < 1)
		return -1;
	*sel = data[0];
	return fuzz_file(data + 1, size - 1, path, path_len);
}

/* A server's /tokenize as ls_token_count_fn, its answers from the input too: ctx is a struct
 * fuzz_counter (fail: it fails, as a server can; else one token per div bytes). */
struct fuzz_counter {
	int      fail;
	unsigned div;
};

static inline int fuzz_count(void *ctx, const char *text, uint32_t *tokens)
{
	const struct fuzz_counter *c = ctx;
	if (c->fail)
		return -5; /* the server's /tokenize failed */
	*tokens = (uint32_t)(strlen(text) / c->div);
	return 0;
}

#endif
