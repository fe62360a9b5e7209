/* driver.c's pacing: the run sets a 1 ns timer slack for its timed waits and gives the caller
 * its own back (the slack is per thread and would otherwise outlive the run). */
#include <criterion/criterion.h>
#include <sys/prctl.h>
#include "driver/driver.h"

Test(pacing, timer_slack_is_restored_after_a_run)
{
	cr_assert_eq(prctl(PR_SET_TIMERSLACK, 50000UL, 0, 0, 0), 0);
	struct ls_driver_opts opts = { .url = "http://127.0.0.1:9/v1/completions" };
	struct ls_run run = { 0 };
	/* No jobs: the loop starts and ends at once, nothing is sent. */
	cr_assert_eq(ls_driver_run(&opts, NULL, 0, &run), 0);
	cr_expect_eq(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 50000);
	ls_driver_pool_close();
	ls_run_free(&run);
}
