/* base/ — what every stage stands on.
 * Takes: nothing from other stages.
 * Gives: the one clock (clock.h), number conversion (numconv.h), the seeded rng (rng.h), the one
 * percentile (stats.h), the growable buffer and its one JSON string escaper (strbuf.h), JSON
 * files (json_file.h), the per-request record every stage passes on (record.h), the loop hook a
 * stage fills to be waited on by the driver's loop (loop_hook.h), table-driven flags with their
 * number parsers (opts.h) for every command, the Authorization header (auth.h), and output
 * files that are whole or absent (outfile.h). */
#ifndef LATSCOPE_BASE_H
#define LATSCOPE_BASE_H

#include "base/clock.h"
#include "base/numconv.h"
#include "base/rng.h"
#include "base/stats.h"
#include "base/strbuf.h"
#include "base/json_file.h"
#include "base/record.h"
#include "base/loop_hook.h"
#include "base/auth.h"
#include "base/opts.h"
#include "base/outfile.h"

#endif
