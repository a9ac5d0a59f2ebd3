/*
 * values.c - the value types of the key table (see keys.h): one parser and
 * one formatter per type, writing and reading fields by their offset.
 *
 * Pure: no I/O. A setter either writes the whole value or nothing, and says
 * what it expected; the file reader and the command line put the key, the
 * value and the place in front of that, each its own way.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/keys.h"
#include "util/cidr.h"
#include "util/errmsg.h"
#include "util/names.h"
#include "util/sockaddr.h"

/* ---- fields ---- */

static unsigned char *field_of(const struct config_key *k, const struct config *c,
			       const struct breaker_policy *policy)
{
	const void *base = k->place == CONFIG_IN_POLICY ? (const void *)policy : (const void *)c;
	return (unsigned char *)base + k->offset;
}

static unsigned *count_of(const struct config_key *k, const struct config *c)
{
	return (unsigned *)((unsigned char *)c + k->count_offset);
}

/* Integers and enums are written at their own width: uint32_t, unsigned
 * and the enums are 4 bytes, durations 8. */
static void store_number(unsigned char *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t)) {
		memcpy(field, &v, sizeof(v));
	} else {
		uint32_t v32 = (uint32_t)v;
		memcpy(field, &v32, sizeof(v32));
	}
}

static uint64_t load_number(const unsigned char *field, size_t size)
{
	if (size == sizeof(uint64_t)) {
		uint64_t v;
		memcpy(&v, field, sizeof(v));
		return v;
	}
	uint32_t v32;
	memcpy(&v32, field, sizeof(v32));
	return v32;
}

/* ---- parsers ---- */

static bool parse_u64(const char *text, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return false; /* strtoull would take "-1" and " 1" */
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end != '\0')
		return false;
	*out = v;
	return true;
}

bool config_parse_duration_ms(const char *text, uint64_t *out_ms)
{
	char *end;
	if (!isdigit((unsigned char)text[0]))
		return false;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno)
		return false;
	uint64_t scale;
	if (*end == '\0' || strcmp(end, "ms") == 0)
		scale = 1; /* a bare number is milliseconds, as in HAProxy */
	else if (strcmp(end, "s") == 0)
		scale = 1000;
	else if (strcmp(end, "m") == 0)
		scale = 60000;
	else
		return false;
	if (v > UINT64_MAX / scale)
		return false;
	*out_ms = v * scale;
	return true;
}

static size_t format_duration(uint64_t ms, char *buf, size_t size)
{
	unsigned long long v = ms;
	if (ms > 0 && ms % 60000 == 0)
		return (size_t)snprintf(buf, size, "%llum", v / 60000);
	if (ms > 0 && ms % 1000 == 0)
		return (size_t)snprintf(buf, size, "%llus", v / 1000);
	return (size_t)snprintf(buf, size, "%llums", v);
}

static bool parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "1"};
	static const char *const no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(text, yes[i]) == 0)
			return *out = true, true;
		if (strcmp(text, no[i]) == 0)
			return *out = false, true;
	}
	return false;
}

size_t config_words_format(const struct config_word *words, char *buf, size_t size)
{
	size_t n = 0, shown = 0, total = 0;
	for (const struct config_word *w = words; w->word; w++)
		total += !w->alias;
	buf[0] = '\0';
	for (const struct config_word *w = words; w->word; w++) {
		if (w->alias)
			continue;
		const char *sep = shown == 0 ? "" : shown + 1 == total ? " or " : ", ";
		n += (size_t)snprintf(buf + (n < size ? n : size - 1), n < size ? size - n : 1,
				      "%s%s", sep, w->word);
		shown++;
	}
	return n;
}

static const char *address_forms(unsigned address)
{
	switch (address & (CONFIG_ADDRESS_UNIX | CONFIG_ADDRESS_NONE)) {
	case CONFIG_ADDRESS_UNIX:
		return "HOST:PORT, [IPV6]:PORT or unix:PATH";
	case CONFIG_ADDRESS_NONE:
		return "HOST:PORT, [IPV6]:PORT or none";
	case CONFIG_ADDRESS_UNIX | CONFIG_ADDRESS_NONE:
		return "HOST:PORT, [IPV6]:PORT, unix:PATH or none";
	default:
		return "HOST:PORT or [IPV6]:PORT";
	}
}

/* ---- setters, one per type ---- */

static bool set_uint(const struct config_key *k, unsigned char *field, const char *value,
		     char *err, size_t err_size)
{
	uint64_t v;
	if (!parse_u64(value, &v) || v < k->min || v > k->max) {
		errmsg_set(err, err_size, "expected %llu..%llu", (unsigned long long)k->min,
			   (unsigned long long)k->max);
		return false;
	}
	store_number(field, k->size, v);
	return true;
}

static bool set_duration(const struct config_key *k, unsigned char *field, const char *value,
			 char *err, size_t err_size)
{
	uint64_t ms;
	if (!config_parse_duration_ms(value, &ms) || ms < k->min || ms > k->max) {
		char min[32], max[32];
		format_duration(k->min, min, sizeof(min));
		format_duration(k->max, max, sizeof(max));
		errmsg_set(err, err_size, "expected a duration %s%s%s%s such as 30s or 500ms",
			   k->min == 0 ? "(0 for none)" : k->min == 1 ? "above 0" : "of at least ",
			   k->min <= 1 ? "" : min,
			   k->max == UINT64_MAX ? "" : " and at most ",
			   k->max == UINT64_MAX ? "" : max);
		return false;
	}
	store_number(field, sizeof(uint64_t), ms);
	return true;
}

static bool set_status_set(unsigned char *field, const char *value, char *err, size_t err_size)
{
	struct status_set set;
	if (!status_set_parse(&set, value, err, err_size))
		return false;
	memcpy(field, &set, sizeof(set));
	return true;
}

static bool set_enum(const struct config_key *k, unsigned char *field, const char *value,
		     char *err, size_t err_size)
{
	for (const struct config_word *w = k->words; w->word; w++) {
		if (strcmp(w->word, value) == 0) {
			store_number(field, k->size, (uint32_t)w->value);
			return true;
		}
	}
	char words[256];
	config_words_format(k->words, words, sizeof(words));
	errmsg_set(err, err_size, "expected %s", words);
	return false;
}

static const struct config_word *find_word(const struct config_word *words, const char *text,
					   size_t len)
{
	for (const struct config_word *w = words; w->word; w++)
		if (strlen(w->word) == len && memcmp(w->word, text, len) == 0)
			return w;
	return NULL;
}

/* "state, outcome": the words' values OR-ed. The first word that is not
 * one of them is named, so a typo is found without reading the list. */
static bool set_word_set(const struct config_key *k, unsigned char *field, const char *value,
			 char *err, size_t err_size)
{
	char words[256];
	config_words_format(k->words, words, sizeof(words));
	uint32_t bits = 0;
	const char *p = value;
	do {
		p += strspn(p, " \t");
		size_t len = strcspn(p, ",");
		size_t word_len = len;
		while (word_len > 0 && (p[word_len - 1] == ' ' || p[word_len - 1] == '\t'))
			word_len--;
		if (word_len == 0) {
			errmsg_set(err, err_size, "expected a comma-separated list of %s", words);
			return false;
		}
		const struct config_word *w = find_word(k->words, p, word_len);
		if (!w) {
			errmsg_set(err, err_size, "'%.*s' is not one of %s", (int)word_len, p, words);
			return false;
		}
		bits |= (uint32_t)w->value;
		p += len;
	} while (*p++ == ',');
	store_number(field, k->size, bits);
	return true;
}

/* Canonical: the one word that says it all ("all", "none"), else each
 * single-bit word set, in table order. */
static size_t format_word_set(const struct config_key *k, uint32_t bits, char *buf, size_t size)
{
	for (const struct config_word *w = k->words; w->word; w++)
		if (!w->alias && (uint32_t)w->value == bits)
			return (size_t)snprintf(buf, size, "%s", w->word);
	size_t n = 0;
	buf[0] = '\0';
	for (const struct config_word *w = k->words; w->word; w++) {
		uint32_t v = (uint32_t)w->value;
		if (w->alias || v == 0 || (v & (v - 1)) != 0 || !(bits & v))
			continue;
		n += (size_t)snprintf(buf + (n < size ? n : size - 1), n < size ? size - n : 1,
				      "%s%s", n ? "," : "", w->word);
	}
	return n;
}

static bool set_address(const struct config_key *k, struct config *c, unsigned char *field,
			const char *value, char *err, size_t err_size)
{
	const char *forms = address_forms(k->address);

	if ((k->address & CONFIG_ADDRESS_NONE) && (value[0] == '\0' || strcmp(value, "none") == 0)) {
		field[0] = '\0';
		return true;
	}
	struct sockaddr_storage addr;
	socklen_t len;
	char why[256];
	if (!sockaddr_parse(value, NULL, &addr, &len, why, sizeof(why))) {
		/* The parser's detail ("port must be ...") when it adds to
		 * the forms; its own "expected ..." would only repeat them. */
		if (strncmp(why, "expected", 8) == 0)
			errmsg_set(err, err_size, "expected %s", forms);
		else
			errmsg_set(err, err_size, "expected %s (%s)", forms, why);
		return false;
	}
	if (addr.ss_family == AF_UNIX && !(k->address & CONFIG_ADDRESS_UNIX)) {
		errmsg_set(err, err_size, "expected %s (not a unix socket)", forms);
		return false;
	}
	if (strlen(value) >= k->size) {
		errmsg_set(err, err_size, "expected %s of at most %zu characters", forms,
			   k->size - 1);
		return false;
	}
	if (k->flags & CONFIG_KEY_REPEATABLE) {
		unsigned *count = count_of(k, c);
		if (*count == k->max_count) {
			errmsg_set(err, err_size, "expected at most %u of them", k->max_count);
			return false;
		}
		field += (size_t)(*count)++ * k->size;
	}
	memcpy(field, value, strlen(value) + 1);
	return true;
}

static bool set_bool(unsigned char *field, const char *value, char *err, size_t err_size)
{
	bool v;
	if (!parse_bool(value, &v)) {
		errmsg_set(err, err_size, "expected true or false");
		return false;
	}
	memcpy(field, &v, sizeof(v));
	return true;
}

/* A file the agent writes: absolute, so that a daemon started from
 * anywhere (systemd, a container) writes where the operator meant. */
static bool set_path(const struct config_key *k, unsigned char *field, const char *value,
		     char *err, size_t err_size)
{
	if (value[0] == '\0' || strcmp(value, "none") == 0) {
		field[0] = '\0';
		return true;
	}
	if (value[0] != '/' || strlen(value) >= k->size) {
		errmsg_set(err, err_size, "expected an absolute path of at most %zu characters, or none",
			   k->size - 1);
		return false;
	}
	memcpy(field, value, strlen(value) + 1);
	return true;
}

/* A name sent to HAProxy inside a command: only what HAProxy accepts in
 * a name, so it can never carry another command. */
static bool set_name(const struct config_key *k, unsigned char *field, const char *value,
		     char *err, size_t err_size)
{
	if (value[0] == '\0' || strcmp(value, "none") == 0) {
		field[0] = '\0';
		return true;
	}
	if (strlen(value) >= k->size || !name_is_valid(value, strlen(value))) {
		errmsg_set(err, err_size,
			   "expected an HAProxy name (letters, digits, '-', '_', '.', ':') of at "
			   "most %zu characters, or none",
			   k->size - 1);
		return false;
	}
	memcpy(field, value, strlen(value) + 1);
	return true;
}

/* "0660": octal, as chmod and HAProxy's `mode` spell it. */
static bool set_mode(const struct config_key *k, unsigned char *field, const char *value,
		     char *err, size_t err_size)
{
	char *end;
	unsigned long v = 0;
	bool ok = value[0] >= '0' && value[0] <= '7' && strlen(value) <= 4;
	if (ok) {
		v = strtoul(value, &end, 8);
		ok = *end == '\0' && v >= k->min && v <= k->max;
	}
	if (!ok) {
		errmsg_set(err, err_size, "expected an octal file mode %04llo..%04llo, such as 0660",
			   (unsigned long long)k->min, (unsigned long long)k->max);
		return false;
	}
	store_number(field, k->size, v);
	return true;
}

bool config_key_set(const struct config_key *k, struct config *c,
		    struct breaker_policy_layer *layer, const char *value, char *err,
		    size_t err_size)
{
	if (k->place == CONFIG_IN_POLICY && !layer) {
		errmsg_set(err, err_size, "a policy key outside a policy section");
		return false;
	}
	unsigned char *field = field_of(k, c, layer ? &layer->values : NULL);
	bool ok = false;

	switch (k->type) {
	case CONFIG_UINT:
		ok = set_uint(k, field, value, err, err_size);
		break;
	case CONFIG_DURATION:
		ok = set_duration(k, field, value, err, err_size);
		break;
	case CONFIG_STATUS_SET:
		ok = set_status_set(field, value, err, err_size);
		break;
	case CONFIG_ENUM:
		ok = set_enum(k, field, value, err, err_size);
		break;
	case CONFIG_WORD_SET:
		ok = set_word_set(k, field, value, err, err_size);
		break;
	case CONFIG_ADDRESS:
		ok = set_address(k, c, field, value, err, err_size);
		break;
	case CONFIG_BOOL:
		ok = set_bool(field, value, err, err_size);
		break;
	case CONFIG_PATH:
		ok = set_path(k, field, value, err, err_size);
		break;
	case CONFIG_NAME:
		ok = set_name(k, field, value, err, err_size);
		break;
	case CONFIG_ALLOWLIST:
		/* Each occurrence adds to the list, all of it or nothing. */
		ok = cidr_list_add((struct cidr_list *)(void *)field, value, err, err_size);
		break;
	case CONFIG_MODE:
		ok = set_mode(k, field, value, err, err_size);
		break;
	case CONFIG_OBSOLETE:
		return true;
	}
	if (!ok)
		return false;
	if (k->place == CONFIG_IN_POLICY)
		layer->fields |= k->field;
	if (k->flags & CONFIG_KEY_MARKS_GIVEN)
		*((bool *)((unsigned char *)c + k->given_offset)) = true;
	return true;
}

void config_key_clear(const struct config_key *k, struct config *c)
{
	if (k->type == CONFIG_ALLOWLIST)
		memset((unsigned char *)c + k->offset, 0, k->size);
	else if (k->flags & CONFIG_KEY_REPEATABLE)
		*count_of(k, c) = 0;
}

/* ---- formatting ---- */

size_t config_key_format(const struct config_key *k, const struct config *c,
			 const struct breaker_policy *policy, char *buf, size_t size)
{
	const unsigned char *field = field_of(k, c, policy);

	switch (k->type) {
	case CONFIG_UINT:
		return (size_t)snprintf(buf, size, "%llu",
					(unsigned long long)load_number(field, k->size));
	case CONFIG_DURATION:
		return format_duration(load_number(field, sizeof(uint64_t)), buf, size);
	case CONFIG_STATUS_SET: {
		struct status_set set;
		memcpy(&set, field, sizeof(set));
		return status_set_format(&set, buf, size);
	}
	case CONFIG_ENUM: {
		int v = (int)load_number(field, k->size);
		for (const struct config_word *w = k->words; w->word; w++)
			if (!w->alias && w->value == v)
				return (size_t)snprintf(buf, size, "%s", w->word);
		return (size_t)snprintf(buf, size, "%d", v);
	}
	case CONFIG_WORD_SET:
		return format_word_set(k, (uint32_t)load_number(field, k->size), buf, size);
	case CONFIG_ADDRESS: {
		unsigned count = 1;
		if (k->flags & CONFIG_KEY_REPEATABLE)
			count = *count_of(k, c);
		else if (field[0] == '\0')
			count = 0;
		if (count == 0)
			return (size_t)snprintf(buf, size, "none");
		size_t n = 0;
		for (unsigned i = 0; i < count; i++)
			n += (size_t)snprintf(buf + (n < size ? n : size - 1),
					      n < size ? size - n : 1, "%s%s", i ? ", " : "",
					      (const char *)field + (size_t)i * k->size);
		return n;
	}
	case CONFIG_BOOL: {
		bool v;
		memcpy(&v, field, sizeof(v));
		return (size_t)snprintf(buf, size, "%s", v ? "true" : "false");
	}
	case CONFIG_PATH:
	case CONFIG_NAME:
		return (size_t)snprintf(buf, size, "%s", field[0] ? (const char *)field : "none");
	case CONFIG_ALLOWLIST:
		return cidr_list_format((const struct cidr_list *)(const void *)field, buf, size);
	case CONFIG_MODE:
		return (size_t)snprintf(buf, size, "%04llo",
					(unsigned long long)load_number(field, k->size));
	case CONFIG_OBSOLETE:
		break;
	}
	return (size_t)snprintf(buf, size, "%s", "");
}
