/* A C worker against the installed JSON Lines library: open a table, decide two letters in one
 * call (the seed letter, and one without its required fields: the default, counted invalid),
 * print "verb verb invalid=N". Exit 0 on success, 2 on any API error. */
#include <stdio.h>
#include <string.h>

#include "bindings/jsonl/replaygate_jsonl.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_jsonl TABLE.rgt\n");
    return 2;
  }
  rg_error err;
  rgj_gate* gate = NULL;
  if (rgj_open(argv[1], &gate, &err) != RG_OK) {
    /* rg_status_name is the runtime's (libreplaygate_runtime); this library exports rgj_* only */
    fprintf(stderr, "consumer_jsonl: status %d: %s\n", (int)err.status, err.message);
    return 2;
  }
  const char* lines =
      "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
      "\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n"
      "{\"topic\":\"payment.capture\",\"attempts\":1}\n";
  uint32_t verbs[2];
  size_t count = 0, invalid = 0, consumed = 0;
  int rc = 2;
  if (rgj_decide_lines(gate, lines, strlen(lines), verbs, 2, &count, &invalid, &consumed, NULL) ==
          RG_OK &&
      count == 2) {
    rg_str a = rgj_verb_name(gate, verbs[0]), b = rgj_verb_name(gate, verbs[1]);
    printf("%.*s %.*s invalid=%zu\n", (int)a.size, a.data, (int)b.size, b.data, invalid);
    rc = 0;
  }
  rgj_free(gate);
  return rc;
}
