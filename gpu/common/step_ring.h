/* step_ring.h — where the injection library leaves its steps: one file per traced process,
 * <dir>/latscope-gpu-<pid> (dir = $LATSCOPE_GPU_DIR, else /dev/shm), mmap'ed.
 *
 * One writer (the library's drain thread) that never blocks and never waits for a reader:
 * the file is a ring of fixed-size records that overwrites its oldest entry when full.
 * Each record carries a sequence word written last (a per-slot seqlock), so a reader that
 * races the writer skips a half-written record instead of reading it. The header says how
 * the clock was set up, whether tracing is on (and if not, why), and counts what was lost. */
#ifndef LATSCOPE_GPU_STEP_RING_H
#define LATSCOPE_GPU_STEP_RING_H

#include <stddef.h>
#include <stdint.h>
#include "gpu_step.h"

#define LS_RING_MAGIC        0x474e525550475348ull /* "HSGPURNG" */
#define LS_RING_VERSION      1u
#define LS_RING_PREFIX       "latscope-gpu-"
#define LS_RING_DEFAULT_DIR  "/dev/shm"
#define LS_RING_DEFAULT_CAP  (1u << 18)   /* records: 12 MiB, sparse until written */
#define LS_RING_MIN_CAP      64u
#define LS_RING_MAX_CAP      (1u << 24)
#define LS_RING_STATUS_MAX   160
#define LS_RING_DATA_OFFSET  4096u      /* records start one page in */

enum ls_ring_clock {
	LS_RING_CLOCK_NONE = 0,     /* tracing never started */
	LS_RING_CLOCK_CALLBACK = 1, /* cuptiActivityRegisterTimestampCallback: CUPTI stamps in CLOCK_MONOTONIC */
	LS_RING_CLOCK_OFFSET = 2,   /* CUPTI's own clock plus a calibrated offset */
};

enum ls_ring_state {
	LS_RING_STARTING = 0,
	LS_RING_TRACING = 1,
	LS_RING_DISABLED = 2,       /* status says why */
};

struct ls_ring_header {
	uint64_t magic;              /* written last by the writer's init */
	uint32_t version;
	uint32_t header_size;        /* sizeof(struct ls_ring_header) */
	uint32_t record_size;        /* sizeof(struct ls_ring_record) */
	uint32_t capacity;           /* records in the ring */
	uint32_t pid;
	uint32_t state;              /* enum ls_ring_state */
	uint32_t clock;              /* enum ls_ring_clock */
	uint32_t cupti_version;      /* cuptiGetVersion() of the libcupti loaded */
	int64_t  clock_offset_ns;    /* OFFSET: added to CUPTI times (last calibration) */
	uint64_t clock_error_ns;     /* OFFSET: half the best bracket of that calibration */
	uint64_t created_ns;         /* CLOCK_MONOTONIC */
	uint64_t heartbeat_ns;       /* last drain */
	uint64_t head;               /* records ever written */
	uint64_t events;             /* activity records turned into events */
	uint64_t dropped;            /* activity records lost before segmentation (CUPTI or us) */
	uint64_t late;               /* events that came after their time was settled */
	uint64_t fallback_steps;     /* steps closed by sync/idle fallback */
	uint64_t reserved[4];
	char     status[LS_RING_STATUS_MAX]; /* one line: what runs, or why tracing is off */
};

struct ls_ring_record {
	uint64_t seq;                /* 2*index+2 once complete, odd while written */
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t busy_ns;
	uint64_t written_ns;         /* when the library wrote it: record delay = written - end */
	uint32_t device;
	uint32_t n_launches;
	uint32_t flags;              /* LS_GPU_STEP_* */
	uint32_t reserved;
};

_Static_assert(sizeof(struct ls_ring_header) == 304, "ring header layout is an ABI");
_Static_assert(sizeof(struct ls_ring_record) == 56, "ring record layout is an ABI");

struct ls_ring_writer {
	struct ls_ring_header *hdr;
	struct ls_ring_record *recs;
	size_t   map_len;
	char     path[512];
};

/* Creates (truncating) <dir>/latscope-gpu-<pid> with room for capacity records. dir NULL:
 * /dev/shm. Returns 0, or -errno with a message in err. */
int  ls_ring_create(struct ls_ring_writer *w, const char *dir, uint32_t pid, uint32_t capacity,
		    char *err, size_t err_len);
/* Appends one step; never blocks, overwrites the oldest record when full. */
void ls_ring_write(struct ls_ring_writer *w, const struct ls_gpu_step *step, uint64_t now_ns);
/* Sets state and the status line (truncated to fit). */
void ls_ring_set_status(struct ls_ring_writer *w, uint32_t state, const char *status);
/* Adds to a header counter (single writer: plain atomic stores). */
void ls_ring_add(uint64_t *counter, uint64_t n);
void ls_ring_store(uint64_t *field, uint64_t v);
void ls_ring_close(struct ls_ring_writer *w);

/* A snapshot of one ring, as a reader sees it. */
struct ls_ring_snapshot {
	struct ls_ring_header hdr;   /* copied; counters as of the read */
	struct ls_ring_record *recs; /* complete records, oldest first (malloc'ed) */
	size_t   n_recs;
	uint64_t overwritten;        /* records the ring no longer holds */
	uint64_t torn;               /* records skipped because the writer was on them */
};

/* Reads a ring file. Returns 0, or -errno with a message naming the file in err
 * (-EINVAL: not a latscope ring or a version we do not know). */
int  ls_ring_read(const char *path, struct ls_ring_snapshot *snap, char *err, size_t err_len);
void ls_ring_snapshot_free(struct ls_ring_snapshot *snap);

#endif
