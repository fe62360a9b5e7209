/* record_fields.h — the one list of every field of a record (ARCHITECTURE.md "A run is a value").
 * Takes: the structs of record.h. Gives: a table per record type (a request, a frame, a run's own
 * measured fields) that the record file's writer and reader, the move of a rank's stamps into
 * rank 0's clock, the copy of a run's fields and the merge of ranks' runs all walk. A new field
 * is one line here: every one of those paths picks it up with no other edit
 * (tests/unit/test_record_fields.c walks each table through each path). */
#ifndef LATSCOPE_RECORD_FIELDS_H
#define LATSCOPE_RECORD_FIELDS_H

#include <stddef.h>
#include <stdint.h>
#include "base/record.h"
#include "base/strbuf.h"

enum ls_field_kind {
	LS_FK_STAMP,    /* uint64_t CLOCK_MONOTONIC ns: ns after base_ns in a file; moved between clocks */
	LS_FK_U64,      /* uint64_t number */
	LS_FK_U64_STR,  /* uint64_t written as a string: too large for a JSON double (socket cookies) */
	LS_FK_U32,      /* uint32_t */
	LS_FK_I32,      /* int32_t */
	LS_FK_INT,      /* int */
	LS_FK_SIZE,     /* size_t */
	LS_FK_DOUBLE,   /* double (a non-finite one is written as 0) */
	LS_FK_FAIL,     /* enum ls_fail, by its stable name */
	LS_FK_TEXT,     /* char[size], NUL-terminated */
};

/* How ranks' values of a run field combine into the merged run's. */
enum ls_field_merge {
	LS_FM_NONE,     /* the first run's (the reader derives it: counts of lines) */
	LS_FM_MIN,      /* smallest non-zero (a stamp: "the first time it happened") */
	LS_FM_MAX,
	LS_FM_SUM,
	LS_FM_OR,
};

struct ls_field {
	const char *name;        /* the JSON key, stable in every file */
	uint8_t     kind;        /* enum ls_field_kind */
	uint8_t     merge;       /* enum ls_field_merge (run fields) */
	uint8_t     derived;     /* written, not read back: the reader recounts it */
	uint8_t     late;        /* may also come on a later line of its request: the engine's account
				  * joined after the request's line was written (ls_request_late_put) */
	uint16_t    offset, size;
	int64_t     lo, hi;      /* the reader clamps integers to [lo, hi] (hostile files) */
	double      dflt;        /* the reader's value when the key is absent */
};

extern const struct ls_field ls_request_fields[];
extern const size_t ls_n_request_fields;
/* A frame is written as an array of these, in this order. */
extern const struct ls_field ls_frame_fields[];
extern const size_t ls_n_frame_fields;
/* struct ls_run's own measured fields (not its requests, not its plan). */
extern const struct ls_field ls_run_fields[];
extern const size_t ls_n_run_fields;

/* Every non-zero stamp of obj (0 stays "did not happen") through map. */
typedef uint64_t (*ls_stamp_map)(void *ctx, uint64_t t);
void ls_fields_map_stamps(const struct ls_field *t, size_t n, void *obj, ls_stamp_map map, void *ctx);
/* A request's stamps and its frames', through map. */
void ls_request_map_stamps(struct ls_request *r, ls_stamp_map map, void *ctx);
/* A run's own stamps (start, end, ...), through map. */
void ls_run_map_stamps(struct ls_run *run, ls_stamp_map map, void *ctx);

/* Every run field of src into dst (not its requests). */
void ls_run_copy_fields(struct ls_run *dst, const struct ls_run *src);
/* src's run fields merged into dst's by each field's rule (both in one clock). */
void ls_run_merge_fields(struct ls_run *dst, const struct ls_run *src);

/* Appends ,"name":value for each field of obj (stamps as ns after base, signed) to b; the
 * request line's writer (no per-field allocation). first: no leading comma. -ENOMEM or 0. */
int ls_fields_put(struct ls_strbuf *b, const struct ls_field *t, size_t n, const void *obj, uint64_t base,
		  int first);
/* A frame as [v0,v1,...] in ls_frame_fields' order. -ENOMEM or 0. */
int ls_frame_put(struct ls_strbuf *b, const struct ls_frame *f, uint64_t base);
/* The most characters ls_fields_put writes for one object of t, text fields but their escapes. */
size_t ls_fields_max_chars(const struct ls_field *t, size_t n);

/* Reads each (non-derived) field from the JSON object o (a cJSON *) into obj: absent keys take
 * their default, integers are clamped, stamps made absolute with base. */
void ls_fields_get(const void *o, const struct ls_field *t, size_t n, void *obj, uint64_t base);
/* A frame from its JSON array (a cJSON *). 0, or -EINVAL when it is not ls_n_frame_fields numbers. */
int ls_frame_get(const void *arr, struct ls_frame *f, uint64_t base);

/* A request's late fields alone (,"name":value each), and read back from the JSON object o into
 * r, and copied from src to dst: the record file's "latscope_engine" line. -ENOMEM or 0. */
int ls_request_late_put(struct ls_strbuf *b, const struct ls_request *r);
void ls_request_late_get(const void *o, struct ls_request *r);
void ls_request_late_copy(struct ls_request *dst, const struct ls_request *src);

/* The JSON array of the frame fields' names (the record header's "frame_fields"). */
int ls_frame_field_names(struct ls_strbuf *b);

#endif
