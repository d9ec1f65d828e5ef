// Fixture of tests/scripts/include_rules_refuses.sh: the pipeline includes the runtime's public
// header (allowed) and a header under runtime/internal/ (refused).
#include "runtime/internal/table_impl.h"
#include "runtime/table.h"
