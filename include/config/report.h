/*
 * report.h - how the checks of a whole configuration (config.c,
 * exposure.c) say where a key was set, inside spoa/config/ (report.c).
 */
#ifndef SPOA_CONFIG_REPORT_H
#define SPOA_CONFIG_REPORT_H

#include <stdio.h>

#include "config/sources.h"

/* Starts a message at where a key was set: "PATH:LINE: " or "spoa-breaker: ". */
void config_report_at(FILE *errors, const struct config *c, int origin);

/* Writes into buf a key as the user wrote it, and for the other side of a
 * conflict (culprit_origin not 0) where it was set. */
void config_spell(char *buf, size_t size, const struct config_key *k, const char *value,
		  int origin, int culprit_origin, const struct config *c);

/* Where key was set: its line in origins; 0 when origins is NULL. */
int config_origin_of(const struct config_origins *origins, const struct config_key *key);

#endif /* SPOA_CONFIG_REPORT_H */
