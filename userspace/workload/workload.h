/* workload/ — what to send and when.
 * Takes: dataset settings (random lengths, ShareGPT or jsonl files, a seed), an arrival process
 * (rate, burstiness, seed).
 * Gives: struct ls_dataset (prompts with their token counts, dataset.h) and struct ls_arrival (each
 * request's scheduled offset, arrival.h), the same for the same seed on every machine. */
#ifndef LATSCOPE_WORKLOAD_H
#define LATSCOPE_WORKLOAD_H

#include "workload/dataset.h"
#include "workload/dataset_peer.h"
#include "workload/arrival.h"

#endif
