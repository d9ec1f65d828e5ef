// Entry point of the `replaygate` command; everything happens in replaygate::cli::run().
#include "tools/cli/commands.h"

#ifdef REPLAYGATE_WITH_MIMALLOC
#include <mimalloc.h>
#endif

int main(int argc, char** argv) {
#ifdef REPLAYGATE_WITH_MIMALLOC
  // Huge OS pages for the heap (transparent huge pages where the kernel allows them): a 4 KiB
  // page fault costs tens of microseconds on some VMs, and compiling a 1,000,000-row policy
  // touches 1.4 GB. Segments allocated from here on use them; nothing changes semantically.
  mi_option_enable(mi_option_large_os_pages);
  // A short-lived process: returning freed memory to the OS only to fault it in again costs more.
  mi_option_disable(mi_option_allow_decommit);
#endif
  return replaygate::cli::run(argc, argv);
}
