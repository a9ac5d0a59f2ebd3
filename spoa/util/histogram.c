/*
 * histogram.c - the bucket bounds of every latency histogram (histogram.h).
 *
 * A NOTIFY is decoded, judged and answered in a few microseconds; the upper
 * buckets are there to show a loop that stalls (a slow log sink, swapping).
 */
#include "util/histogram.h"

const uint32_t histogram_bounds_us[HISTOGRAM_BOUNDS] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
};
