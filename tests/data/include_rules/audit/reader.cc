// Fixture of tests/scripts/include_rules_refuses.sh: the audit log includes common/ (allowed).
#include "common/json.h"
