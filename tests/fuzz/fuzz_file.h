/* fuzz_file.h — for loaders that take a path: the input goes into an anonymous memory file and
 * the loader gets /proc/self/fd/N, so fuzzing touches no disk. */
#ifndef LATSCOPE_FUZZ_FILE_H
#define LATSCOPE_FUZZ_FILE_H

#include <stdio.h>
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

#endif
