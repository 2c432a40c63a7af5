#include <stddef.h>
#include <stdint.h>

// libFuzzer's library entry point (compiler-rt FuzzerInterface.h). SwiftPM
// links an executable target's `main` to `<Target>_main`, so libFuzzer's own
// `main` never runs; each target's `@main` hands control to this instead.
// It is defined in libclang_rt.fuzzer, which `-sanitize=fuzzer` links.
int LLVMFuzzerRunDriver(int *argc, char ***argv,
                        int (*UserCb)(const uint8_t *Data, size_t Size));
