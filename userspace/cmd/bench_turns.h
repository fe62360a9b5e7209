/* bench_turns.h — SGLang's multi-turn generated-shared-prefix (--gsp-num-turns T > 1) around a
 * bench run (python/sglang/benchmark/serving.py wrap_multi_turn_request_func): the driver sends
 * each conversation's first turn by the schedule; when turn t returns, turn t + 1 goes at once in
 * the same slot, its messages the conversation so far (each question, each reply as the server
 * streamed it), with the include_usage SGLang asks for. Records: conversation c's turn t is
 * measured record c * T + t. */
#ifndef LATSCOPE_BENCH_TURNS_H
#define LATSCOPE_BENCH_TURNS_H

#include <stddef.h>
#include <stdint.h>
#include "config/config.h"
#include "driver/driver.h"
#include "base/strbuf.h"
#include "workload/dataset.h"

struct ls_bench_turns {
	uint32_t turns;                 /* T; 0 when off */
	size_t   n_conv;
	struct ls_driver_job *firsts;   /* each conversation's first turn, for the driver */
	struct ls_driver_job *jobs;     /* the measured jobs: conversation c's turn t at c * T + t */
	struct ls_request *recs;        /* their records (contiguous: the plan's) */
	const struct ls_dataset *ds;    /* the turns' questions */
	struct ls_strbuf *text;         /* each turn's reply, as streamed */
};

/* Turns per conversation of c's dataset (1: single requests). */
uint32_t ls_bench_turns_of(const struct ls_config *c);
/* Off (t zeroed) unless c asks for more than one turn; else 0 or -errno after a message (MPI
 * runs and a job count that is not a multiple of T are refused). jobs: the measured jobs. */
int ls_bench_turns_init(struct ls_bench_turns *t, const struct ls_config *c, struct ls_driver_job *jobs, size_t n,
			const struct ls_dataset *ds);
/* The driver's options, and the jobs it starts by the schedule (the first turns when on). */
void ls_bench_turns_driver(struct ls_bench_turns *t, struct ls_driver_opts *o, struct ls_driver_job **jobs,
			   size_t *n);
void ls_bench_turns_free(struct ls_bench_turns *t);

#endif
