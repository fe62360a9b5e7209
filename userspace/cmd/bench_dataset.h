/* bench_dataset.h — `latscope bench`'s prompts: the dataset the flags name, built by workload/
 * with the server's /tokenize as its counter. */
#ifndef LATSCOPE_BENCH_DATASET_H
#define LATSCOPE_BENCH_DATASET_H

#include "config/config.h"
#include "server/bench_server.h"
#include "workload/dataset.h"

/* 0, or -errno after a message naming what failed. */
int ls_bench_dataset(const struct ls_config *c, struct ls_server *server, struct ls_dataset *ds);

#endif
