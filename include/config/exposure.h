/*
 * exposure.h - who may connect, checked on a whole configuration, inside
 * spoa/config/ (exposure.c): the warnings config_from_args() writes. The
 * refusal, config_check_exposure(), is config.h's: a reload runs it too.
 */
#ifndef SPOA_CONFIG_EXPOSURE_H
#define SPOA_CONFIG_EXPOSURE_H

#include <stdio.h>

#include "config/keys.h"

/* A warning for each runtime_api socket reached over TCP elsewhere than
 * loopback: whoever reaches it can drain every server. */
void config_warn_remote_runtime_api(const struct config *c,
				    const struct config_origins *origins, FILE *errors);

/* A warning for each entry of the allowlist key (allow, admin_allow) with
 * bits set past its prefix: the network it lets in is said. */
void config_warn_host_bits(const struct config *c, const struct config_origins *origins,
			   const char *key, FILE *errors);

#endif /* SPOA_CONFIG_EXPOSURE_H */
