#ifndef AUTHREQ_FUZZ_DRIVER_H
#define AUTHREQ_FUZZ_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// Whether libFuzzer is linked in (the binary was built with -sanitize=fuzzer).
int authreq_fuzzer_is_linked(void);

/// Runs libFuzzer's driver with the process's arguments and `callback` as the target.
int authreq_fuzzer_run(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
