/* A C worker against the installed shared library: load a table, decide the seed letter, print
 * "verb rule checksum". Exit 0 on success, 2 on any API error. */
#include <stdio.h>
#include <string.h>

#include "runtime/replaygate.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer_c TABLE.rgt\n");
    return 2;
  }
  rg_error err;
  rg_shared* shared = NULL;
  if (rg_shared_open(argv[1], 0, &shared, &err) != RG_OK) {
    fprintf(stderr, "consumer_c: %s: %s\n", rg_status_name(err.status), err.message);
    return 2;
  }
  rg_reader* reader = NULL;
  rg_input* in = NULL;
  rg_decision d;
  const rg_table* table = NULL;
  int rc = 2;
  if (rg_reader_new(shared, &reader) == RG_OK && rg_reader_input_new(reader, &in) == RG_OK &&
      rg_input_set_string_by_name(in, "topic", "payment.capture", 15) == RG_OK &&
      rg_input_set_string_by_name(in, "error_class", "timeout", 7) == RG_OK &&
      rg_input_set_int_by_name(in, "attempts", 1) == RG_OK &&
      rg_input_set_string_by_name(in, "idempotency_key", "cap_9f3a", 8) == RG_OK &&
      rg_input_set_bool_by_name(in, "already_committed", 0) == RG_OK &&
      rg_reader_acquire(reader, &table) == RG_OK && rg_reader_decide(reader, in, &d) == RG_OK) {
    rg_str verb = rg_table_verb_name(table, d.verb);
    rg_str rule = rg_table_rule_name(table, &d);
    printf("%.*s %.*s %s\n", (int)verb.size, verb.data, (int)rule.size, rule.data,
           d.table_checksum);
    rc = 0;
  }
  rg_reader_release(reader);
  rg_input_free(in);
  rg_reader_free(reader);
  rg_shared_free(shared);
  return rc;
}
