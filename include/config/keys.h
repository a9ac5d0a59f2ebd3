/*
 * keys.h - the configuration key table (keys.c) and its value types
 * (values.c).
 *
 * One row per key, in the manner of nginx's ngx_command_t: where it may
 * appear, the type of its value and its limits, where the value goes
 * (offsetof into struct config, or into a policy layer), whether SIGHUP
 * applies it, its command-line option and its help. The INI reader, the
 * command line, --help, --check and the reload decision all read this
 * table; none of them knows a key by name.
 */
#ifndef SPOA_CONFIG_KEYS_H
#define SPOA_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* The sections a key may appear in (a bit set: policy keys appear in three). */
enum config_section {
	CONFIG_SECTION_AGENT = 1u << 0,   /* [agent] */
	CONFIG_SECTION_HAPROXY = 1u << 1, /* [haproxy] */
	CONFIG_SECTION_BREAKER = 1u << 2, /* [breaker]: the global policy */
	CONFIG_SECTION_BACKEND = 1u << 3, /* [backend NAME] */
	CONFIG_SECTION_SERVER = 1u << 4,  /* [server BACKEND/SERVER] */
};
#define CONFIG_SECTIONS_POLICY \
	(CONFIG_SECTION_BREAKER | CONFIG_SECTION_BACKEND | CONFIG_SECTION_SERVER)

enum config_type {
	CONFIG_UINT,       /* a decimal number, min..max; a 4- or 8-byte field */
	CONFIG_DURATION,   /* "250ms", "30s", "2m" or bare milliseconds; uint64_t ms, min..max */
	CONFIG_STATUS_SET, /* "429,500-599" or "none"; struct status_set */
	CONFIG_ENUM,       /* one of `words`; an enum field */
	CONFIG_WORD_SET,   /* a comma-separated list of `words`, their values OR-ed; unsigned */
	CONFIG_ADDRESS,    /* HOST:PORT, [IPV6]:PORT, unix:PATH; char[CONFIG_LISTEN_MAX_LEN] */
	CONFIG_BOOL,       /* true/false, yes/no, on/off, 1/0; bool. A flag on the command line */
	CONFIG_PATH,       /* an absolute file path, or "none" (stored as ""); char[size] */
	CONFIG_NAME,       /* an HAProxy name (names.h), or "none" (stored as ""); char[size] */
	CONFIG_OBSOLETE,   /* accepted with a warning (`help` says why), stored nowhere */
	CONFIG_ALLOWLIST,  /* addresses and CIDR blocks, comma-separated, or "any"; struct cidr_list */
	CONFIG_MODE,       /* a file mode in octal ("0660"), min..max; unsigned */
};

/* Where a key's value goes. */
enum config_place {
	CONFIG_IN_CONFIG, /* offset into struct config */
	CONFIG_IN_POLICY, /* offset into the section's breaker_policy_layer.values */
};

enum config_key_flag {
	CONFIG_KEY_REPEATABLE = 1u << 0, /* each occurrence adds (listen, runtime_api, allow) */
	CONFIG_KEY_RELOADABLE = 1u << 1, /* SIGHUP applies it; otherwise a restart does */
	CONFIG_KEY_MARKS_GIVEN = 1u << 2, /* setting it sets the bool at given_offset */
};

/* CONFIG_ADDRESS: which spellings besides HOST:PORT and [IPV6]:PORT. */
enum config_address_flag {
	CONFIG_ADDRESS_UNIX = 1u << 0, /* unix:PATH */
	CONFIG_ADDRESS_NONE = 1u << 1, /* "none" (or empty): turned off, stored as "" */
};

struct config_word {
	const char *word;
	int value;
	bool alias; /* accepted, but never shown in messages or --help */
};

struct config_key {
	const char *name;     /* as written in the file: "max_frame_size" */
	unsigned sections;    /* enum config_section bits */
	enum config_type type;
	enum config_place place;
	size_t offset;        /* of the field in struct config or struct breaker_policy */
	size_t size;          /* of the field (of one element, when repeatable) */
	unsigned field;       /* CONFIG_IN_POLICY: the BREAKER_FIELD_* it sets */
	uint64_t min, max;    /* CONFIG_UINT, CONFIG_DURATION (milliseconds) */
	const struct config_word *words; /* CONFIG_ENUM, CONFIG_WORD_SET; ended by a NULL word */
	unsigned address;     /* CONFIG_ADDRESS: enum config_address_flag bits */
	unsigned flags;       /* enum config_key_flag bits */
	size_t count_offset;  /* repeatable: the unsigned count in struct config */
	unsigned max_count;   /* repeatable: how many the array holds */
	size_t given_offset;  /* CONFIG_KEY_MARKS_GIVEN: a bool in struct config */
	const char *option;   /* the long option, or NULL: in the file only */
	char short_option;    /* or 0 */
	const char *arg;      /* the value in --help: "N", "ADDR"; NULL for a flag */
	const char *help;     /* one line; CONFIG_OBSOLETE: why it is no longer used */
	const char *default_text; /* --help's default when the formatted one would mislead */
};

#define CONFIG_NB_KEYS 56
extern const struct config_key config_keys[]; /* CONFIG_NB_KEYS rows (keys.c checks) */

/* The row of a key as written in the file, or NULL. */
const struct config_key *config_key_find(const char *name);
/* The key of that name a section holds (enforce is [haproxy]'s and a
 * backend's); config_key_find()'s when none does, for the message. */
const struct config_key *config_key_find_in(const char *name, unsigned section);

static inline unsigned config_key_index(const struct config_key *k)
{
	return (unsigned)(k - config_keys);
}

/* "agent", "haproxy", "breaker", "backend NAME", "server BACKEND/SERVER". */
const char *config_section_name(enum config_section section);

/*
 * Where each key of the singleton sections ([agent], [haproxy],
 * [breaker]) was set, for messages that name another line: 0 not set,
 * a line of the file, or CONFIG_FROM_ARGS. A repeatable key keeps its
 * first occurrence.
 */
#define CONFIG_FROM_ARGS (-1)
struct config_origins {
	int line[CONFIG_NB_KEYS];
};

/* ---- values (values.c): one setter and one formatter per type ---- */

/*
 * The one setter: parses value as k's type and writes it into c (a
 * CONFIG_IN_CONFIG key) or into layer (a CONFIG_IN_POLICY key, marking
 * k->field in layer->fields). A repeatable key appends. Returns false
 * with what was expected in err ("expected 1..1000000"), nothing
 * written; the caller names the key and the value its own way (file or
 * command line). CONFIG_OBSOLETE keys are the caller's to warn about:
 * setting one writes nothing and succeeds.
 */
bool config_key_set(const struct config_key *k, struct config *c,
		    struct breaker_policy_layer *layer, const char *value, char *err,
		    size_t err_size);

/* A repeatable key: forget its values (the command line replaces the
 * file's list). Anything else: nothing. */
void config_key_clear(const struct config_key *k, struct config *c);

/*
 * Writes k's value, as the file would spell it, from c (or from policy,
 * for a CONFIG_IN_POLICY key): canonical, so two values are equal exactly
 * when their texts are. A repeatable key's values are joined by ", ";
 * nothing set reads "none". snprintf-like (size > 0): returns the full
 * length.
 */
size_t config_key_format(const struct config_key *k, const struct config *c,
			 const struct breaker_policy *policy, char *buf, size_t size);

/* "a, b or c": the words an enum key accepts, aliases left out. snprintf-
 * like (size > 0). */
size_t config_words_format(const struct config_word *words, char *buf, size_t size);

/* Parses a duration ("250ms", "30s", "2m", "1500"): false on anything else. */
bool config_parse_duration_ms(const char *text, uint64_t *out_ms);

#endif /* SPOA_CONFIG_KEYS_H */
