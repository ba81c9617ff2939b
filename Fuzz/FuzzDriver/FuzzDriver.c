#include "FuzzDriver.h"

// libFuzzer's entry for programs with their own main (LLVM 11 and later). Weak, so that the
// same program links without libFuzzer and then replays saved inputs instead.
extern int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size))
    __attribute__((weak));

int authreq_fuzzer_is_linked(void) { return LLVMFuzzerRunDriver != 0; }

int authreq_fuzzer_run(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size)) {
    if (!LLVMFuzzerRunDriver) return 2;
    return LLVMFuzzerRunDriver(argc, argv, callback);
}
