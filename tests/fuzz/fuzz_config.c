/*
 * fuzz_config.c - libFuzzer target: the input is an INI file given to
 * `spoa-breaker --check -f FILE`.
 *
 * The whole path a configuration takes: the INI reader, every key's
 * setter, the policies resolved through the core's resolver, the
 * enforcement and address checks; then config_free(). The verdict must be
 * 0 (valid) or 1 (refused), never a crash, a read out of bounds or a leak
 * (libFuzzer's leak check runs per input). The file is a memfd, reached
 * through /proc/self/fd: nothing is left on disk, and nothing in the
 * configuration is opened or resolved (addresses are numeric or
 * localhost).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool cond)
{
	if (!cond)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	static struct config c;
	char path[64];

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	int fd = memfd_create("fuzz-config.ini", MFD_CLOEXEC);
	check(fd >= 0);
	check(write(fd, data, size) == (ssize_t)size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

	char *argv[] = {"spoa-breaker", "--check", "-f", path, NULL};
	int status = config_from_args(&c, 4, argv, devnull, devnull);
	check(status == 0 || status == 1);
	config_free(&c);
	close(fd);
	return 0;
}
