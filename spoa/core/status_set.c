/*
 * status_set.c - sets of HTTP statuses (100..599) as a bitmap: the capacity,
 * failure and ignore sets of a breaker policy, their parser and formatter.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/breaker.h"
#include "util/errmsg.h"

static bool in_range(int status)
{
	return status >= STATUS_SET_MIN && status <= STATUS_SET_MAX;
}

void status_set_clear(struct status_set *set)
{
	memset(set, 0, sizeof(*set));
}

bool status_set_add(struct status_set *set, int status)
{
	if (!in_range(status))
		return false;
	set->bits[status / 64] |= UINT64_C(1) << (status % 64);
	return true;
}

bool status_set_add_range(struct status_set *set, int lo, int hi)
{
	if (!in_range(lo) || !in_range(hi) || lo > hi)
		return false;
	for (int status = lo; status <= hi; status++)
		set->bits[status / 64] |= UINT64_C(1) << (status % 64);
	return true;
}

void status_set_union(struct status_set *out, const struct status_set *a,
		      const struct status_set *b)
{
	for (size_t i = 0; i < STATUS_SET_WORDS; i++)
		out->bits[i] = a->bits[i] | b->bits[i];
}

void status_set_intersect(struct status_set *out, const struct status_set *a,
			  const struct status_set *b)
{
	for (size_t i = 0; i < STATUS_SET_WORDS; i++)
		out->bits[i] = a->bits[i] & b->bits[i];
}

void status_set_difference(struct status_set *out, const struct status_set *a,
			   const struct status_set *b)
{
	for (size_t i = 0; i < STATUS_SET_WORDS; i++)
		out->bits[i] = a->bits[i] & ~b->bits[i];
}

bool status_set_is_empty(const struct status_set *set)
{
	for (size_t i = 0; i < STATUS_SET_WORDS; i++)
		if (set->bits[i])
			return false;
	return true;
}

/* ---- parsing ---- */


static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && isblank((unsigned char)*p))
		p++;
	return p;
}

/* Reads the digits at *p (at most 9, plenty to tell 599 from nonsense
 * without overflowing) into *out and advances *p. False if there are none
 * or too many. */
static bool read_number(const char **p, const char *end, int *out)
{
	const char *q = *p;
	int value = 0;
	int digits = 0;

	while (q < end && isdigit((unsigned char)*q)) {
		if (++digits > 9)
			return false;
		value = value * 10 + (*q - '0');
		q++;
	}
	if (digits == 0)
		return false;
	*p = q;
	*out = value;
	return true;
}

/* Parses one item [start, end) into set. The item index (from 1) and its
 * text go into every message so the operator can find it. */
static bool parse_item(struct status_set *set, const char *start, const char *end,
		       unsigned index, char *err, size_t err_size)
{
	const char *p = skip_blanks(start, end);
	const char *stop = end;
	while (stop > p && isblank((unsigned char)stop[-1]))
		stop--;
	int item_len = (int)(stop - p);

	if (p == stop) {
		errmsg_set(err, err_size,
			  "item %u is empty (expected a status 100-599 or a range like 500-599)",
			  index);
		return false;
	}

	int lo = 0, hi = 0;
	const char *q = p;
	if (!read_number(&q, stop, &lo))
		goto not_a_status;
	q = skip_blanks(q, stop);
	hi = lo;
	if (q < stop && *q == '-') {
		q = skip_blanks(q + 1, stop);
		if (!read_number(&q, stop, &hi))
			goto not_a_status;
	}
	if (q != stop)
		goto not_a_status;

	if (!in_range(lo) || !in_range(hi)) {
		errmsg_set(err, err_size, "item %u \"%.*s\": %d is not an HTTP status (expected 100-599)",
			  index, item_len, p, in_range(lo) ? hi : lo);
		return false;
	}
	if (lo > hi) {
		errmsg_set(err, err_size,
			  "item %u \"%.*s\": reversed range (write the lower status first: %d-%d)",
			  index, item_len, p, hi, lo);
		return false;
	}
	status_set_add_range(set, lo, hi);
	return true;

not_a_status:
	if (item_len == 4 && strncmp(p, "none", 4) == 0) {
		errmsg_set(err, err_size, "item %u: \"none\" must stand alone (it is the empty list)",
			  index);
		return false;
	}
	errmsg_set(err, err_size,
		  "item %u \"%.*s\": not a status (expected a status 100-599 or a range like 500-599)",
		  index, item_len, p);
	return false;
}

bool status_set_parse(struct status_set *out, const char *text, char *err, size_t err_size)
{
	struct status_set parsed;
	const char *end = text + strlen(text);
	const char *p = skip_blanks(text, end);
	const char *stop = end;

	while (stop > p && isblank((unsigned char)stop[-1]))
		stop--;
	if (p == stop) {
		errmsg_set(err, err_size,
			  "empty status list (write \"none\" for no statuses, or e.g. \"429,503\")");
		return false;
	}

	status_set_clear(&parsed);
	if ((size_t)(stop - p) == 4 && strncmp(p, "none", 4) == 0) {
		*out = parsed;
		return true;
	}

	unsigned index = 1;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(stop - p));
		const char *item_end = comma ? comma : stop;
		if (!parse_item(&parsed, p, item_end, index, err, err_size))
			return false;
		if (!comma)
			break;
		p = comma + 1;
		index++;
	}
	*out = parsed;
	return true;
}

/* ---- formatting ---- */

/* Appends like snprintf at offset len of buf; returns the new full length
 * whether or not it fit. */
static size_t append(char *buf, size_t size, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t append(char *buf, size_t size, size_t len, const char *fmt, ...)
{
	char piece[16];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(piece, sizeof(piece), fmt, ap);
	va_end(ap);

	if (n <= 0)
		return len;
	if (len < size) {
		size_t room = size - len - 1;
		size_t copy = (size_t)n < room ? (size_t)n : room;
		memcpy(buf + len, piece, copy);
		buf[len + copy] = '\0';
	}
	return len + (size_t)n;
}

size_t status_set_format(const struct status_set *set, char *buf, size_t size)
{
	size_t len = 0;

	if (size > 0)
		buf[0] = '\0';
	if (status_set_is_empty(set))
		return append(buf, size, 0, "none");

	for (int status = STATUS_SET_MIN; status <= STATUS_SET_MAX; status++) {
		if (!status_set_contains(set, status))
			continue;
		int last = status;
		while (last < STATUS_SET_MAX && status_set_contains(set, last + 1))
			last++;
		const char *sep = len ? "," : "";
		if (last - status >= 2)
			len = append(buf, size, len, "%s%d-%d", sep, status, last);
		else if (last > status)
			len = append(buf, size, len, "%s%d,%d", sep, status, last);
		else
			len = append(buf, size, len, "%s%d", sep, status);
		status = last;
	}
	return len;
}
