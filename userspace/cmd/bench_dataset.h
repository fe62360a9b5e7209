/* bench_dataset.h — `latscope bench`'s prompts: the dataset the flags name, built by workload/
 * with the server's /tokenize as its counter. */
#ifndef LATSCOPE_BENCH_DATASET_H
#define LATSCOPE_BENCH_DATASET_H

#include "config/config.h"
#include "server/bench_server.h"
#include "workload/dataset.h"

/* 0, or -errno after a message naming what failed. */
int ls_bench_dataset(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds);

/* Whether requests carry X-SMG-Routing-Key (--gsp-send-routing-key with generated-shared-prefix),
 * and group's key (malloc'd; NULL when out of memory): one per group and run, as SGLang's
 * "<random>_<timestamp>_<group>" (here the run's tag and date). */
int ls_bench_route_keys(const struct ls_config *c);
char *ls_bench_route_key(const char *run_tag, const char *date, uint32_t group);

#endif
