/* step_ring.c — the per-process step ring (format in step_ring.h). The writer maps the file;
 * readers use pread so that a file truncated under them (a pid reused by a new traced
 * process) gives a short read, never SIGBUS. */
#include "step_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static size_t ring_file_size(uint32_t capacity)
{
	return LS_RING_DATA_OFFSET + (size_t)capacity * sizeof(struct ls_ring_record);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int ls_ring_create(struct ls_ring_writer *w, const char *dir, uint32_t pid, uint32_t capacity,
		   char *err, size_t err_len)
{
	memset(w, 0, sizeof(*w));
	if (!dir || !*dir)
		dir = LS_RING_DEFAULT_DIR;
	if (capacity < LS_RING_MIN_CAP)
		capacity = LS_RING_MIN_CAP;
	if (capacity > LS_RING_MAX_CAP)
		capacity = LS_RING_MAX_CAP;
	int n = snprintf(w->path, sizeof(w->path), "%s/%s%u", dir, LS_RING_PREFIX, pid);
	if (n < 0 || (size_t)n >= sizeof(w->path)) {
		snprintf(err, err_len, "step ring directory '%s' is too long a path", dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		int e = errno;
		snprintf(err, err_len, "cannot create step ring directory '%s': %s", dir, strerror(e));
		return -e;
	}
	int fd = open(w->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		int e = errno;
		snprintf(err, err_len, "cannot create step ring '%s': %s", w->path, strerror(e));
		return -e;
	}
	size_t len = ring_file_size(capacity);
	if (ftruncate(fd, (off_t)len) < 0) {
		int e = errno;
		snprintf(err, err_len, "cannot size step ring '%s' to %zu bytes: %s", w->path, len,
			 strerror(e));
		close(fd);
		unlink(w->path);
		return -e;
	}
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, err_len, "cannot map step ring '%s': %s", w->path, strerror(e));
		unlink(w->path);
		return -e;
	}
	w->map_len = len;
	w->hdr = map;
	w->recs = (struct ls_ring_record *)((char *)map + LS_RING_DATA_OFFSET);
	w->hdr->version = LS_RING_VERSION;
	w->hdr->header_size = sizeof(struct ls_ring_header);
	w->hdr->record_size = sizeof(struct ls_ring_record);
	w->hdr->capacity = capacity;
	w->hdr->pid = pid;
	w->hdr->created_ns = mono_ns();
	w->hdr->heartbeat_ns = w->hdr->created_ns;
	snprintf(w->hdr->status, sizeof(w->hdr->status), "starting");
	/* Readers trust nothing until the magic is there. */
	__atomic_store_n(&w->hdr->magic, LS_RING_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

void ls_ring_write(struct ls_ring_writer *w, const struct ls_gpu_step *step, uint64_t now_ns)
{
	if (!w->hdr)
		return;
	uint64_t idx = __atomic_load_n(&w->hdr->head, __ATOMIC_RELAXED);
	struct ls_ring_record *rec = &w->recs[idx % w->hdr->capacity];
	__atomic_store_n(&rec->seq, 2 * idx + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE); /* odd seq visible before the fields change */
	__atomic_store_n(&rec->start_ns, step->start_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->end_ns, step->end_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->busy_ns, step->busy_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->written_ns, now_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->device, step->device, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->n_launches, step->n_launches, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->flags, step->flags, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->seq, 2 * idx + 2, __ATOMIC_RELEASE);
	__atomic_store_n(&w->hdr->head, idx + 1, __ATOMIC_RELEASE);
}

void ls_ring_set_status(struct ls_ring_writer *w, uint32_t state, const char *status)
{
	if (!w->hdr)
		return;
	snprintf(w->hdr->status, sizeof(w->hdr->status), "%s", status ? status : "");
	__atomic_store_n(&w->hdr->state, state, __ATOMIC_RELEASE);
}

void ls_ring_add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

void ls_ring_store(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELEASE);
}

void ls_ring_close(struct ls_ring_writer *w)
{
	if (w->hdr)
		munmap(w->hdr, w->map_len);
	w->hdr = NULL;
	w->recs = NULL;
}

/* Reads exactly len bytes at off; -EIO on a short file. */
static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	while (len) {
		ssize_t got = pread(fd, p, len, off);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (got == 0)
			return -EIO;
		p += got;
		len -= (size_t)got;
		off += got;
	}
	return 0;
}

/* Reads and checks the header. 0, or -EINVAL with err set. */
static int read_header(int fd, const char *path, struct ls_ring_header *h, char *err, size_t err_len)
{
	if (pread_all(fd, h, sizeof(*h), 0) < 0) {
		snprintf(err, err_len, "GPU step ring '%s' is shorter than its header", path);
		return -EINVAL;
	}
	if (h->magic != LS_RING_MAGIC) {
		snprintf(err, err_len, "'%s' is not a latscope GPU step ring (bad magic)", path);
		return -EINVAL;
	}
	if (h->version != LS_RING_VERSION || h->header_size != sizeof(*h) ||
	    h->record_size != sizeof(struct ls_ring_record)) {
		snprintf(err, err_len,
			 "GPU step ring '%s' has format version %u (record %u bytes); this latscope "
			 "reads version %u: use the same latscope build for the library and bench",
			 path, h->version, h->record_size, LS_RING_VERSION);
		return -EINVAL;
	}
	if (h->capacity < LS_RING_MIN_CAP || h->capacity > LS_RING_MAX_CAP) {
		snprintf(err, err_len, "GPU step ring '%s' claims %u records: corrupt", path, h->capacity);
		return -EINVAL;
	}
	h->status[sizeof(h->status) - 1] = 0;
	return 0;
}

/* Copies n_slots records, then reads them again: a slot whose sequence word changed under
 * the copy was being written (seqlock: the writer makes it odd before it touches a field) and
 * gets a sequence no record has. 0 or -1 when the file was cut short. */
static int read_slots(int fd, struct ls_ring_record *slots, size_t n_slots)
{
	static const size_t chunk = 1024;
	struct ls_ring_record again[1024];
	int rc = pread_all(fd, slots, n_slots * sizeof(*slots), LS_RING_DATA_OFFSET);
	for (size_t at = 0; rc == 0 && at < n_slots; at += chunk) {
		size_t k = n_slots - at < chunk ? n_slots - at : chunk;
		rc = pread_all(fd, again, k * sizeof(*again), (off_t)(LS_RING_DATA_OFFSET + at * sizeof(*again)));
		for (size_t j = 0; rc == 0 && j < k; j++)
			if (again[j].seq != slots[at + j].seq)
				slots[at + j].seq = 1;
	}
	return rc < 0 ? -1 : 0;
}

int ls_ring_read(const char *path, struct ls_ring_snapshot *snap, char *err, size_t err_len)
{
	memset(snap, 0, sizeof(*snap));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, err_len, "cannot open GPU step ring '%s': %s", path, strerror(e));
		return -e;
	}
	struct ls_ring_header *h = &snap->hdr;
	if (read_header(fd, path, h, err, err_len) < 0) {
		close(fd);
		return -EINVAL;
	}
	uint64_t cap = h->capacity, head = h->head;
	uint64_t lo = head > cap ? head - cap : 0;
	size_t want = (size_t)(head - lo), n_slots = head < cap ? want : (size_t)cap;
	snap->overwritten = lo;
	if (!want) {
		close(fd);
		return 0;
	}
	struct ls_ring_record *slots = malloc(n_slots * sizeof(*slots));
	snap->recs = malloc(want * sizeof(*snap->recs));
	if (!slots || !snap->recs) {
		free(slots);
		snprintf(err, err_len, "out of memory reading GPU step ring '%s' (%zu records)", path, want);
		close(fd);
		ls_ring_snapshot_free(snap);
		return -ENOMEM;
	}
	int cut = read_slots(fd, slots, n_slots);
	close(fd);
	if (cut) {
		free(slots);
		ls_ring_snapshot_free(snap);
		snprintf(err, err_len, "GPU step ring '%s' was cut short while read (its process "
			 "restarted?): read it again", path);
		return -EAGAIN;
	}
	for (uint64_t i = lo; i < head; i++) {
		const struct ls_ring_record *r = &slots[i % cap];
		if (r->seq != 2 * i + 2) {
			snap->torn++;
			continue;
		}
		snap->recs[snap->n_recs++] = *r;
	}
	free(slots);
	return 0;
}

void ls_ring_snapshot_free(struct ls_ring_snapshot *snap)
{
	free(snap->recs);
	snap->recs = NULL;
	snap->n_recs = 0;
}
