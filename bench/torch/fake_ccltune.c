/* A stand-in for libccltune.so's public summary API, for checking bench/torch/driver.py end to end on a CPU (gloo
 * has no NCCL for the real library to tune). It interposes nothing: ccltuneGetSummary plays a scripted tuning
 * phase, one tick per call (train.py calls it once per step, the same number of times on every rank):
 *   no CCLTUNE_IMPORT: searching for the first FAKE_CCLTUNE_SEARCH_TICKS calls (default 15), one schedule update
 *                      per call, then converged;
 *   CCLTUNE_IMPORT:    the import is applied at the second call (one update), nothing searched;
 *   TORCH_NCCL_USE_COMM_NONBLOCKING=1: no communicator tuned (passed through).
 * CCLTUNE_EXPORT gets a small JSON file at exit.
 *   cc -shared -fPIC -O2 -o /tmp/libccltune-fake.so bench/torch/fake_ccltune.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int communicators;
  int workloads;
  int pending;
  int searching;
  int converged;
  int other;
  int64_t calls;
  int64_t changes;
} ccltuneSummary_t;

static long ticks;

static int env_set(const char* name) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

int ccltuneIsActive(void) { return 1; }

int ccltuneGetSummary(ccltuneSummary_t* out) {
  if (out == NULL) return 1;
  memset(out, 0, sizeof(*out));
  const long t = ticks++;
  if (env_set("TORCH_NCCL_USE_COMM_NONBLOCKING")) return 0;
  const char* n_env = getenv("FAKE_CCLTUNE_SEARCH_TICKS");
  const long n = n_env != NULL ? atol(n_env) : 15;
  out->communicators = 1;
  out->workloads = 3;
  out->calls = 10 * t;
  if (env_set("CCLTUNE_IMPORT")) {
    out->converged = t >= 1 ? 3 : 0;
    out->pending = t >= 1 ? 0 : 3;
    out->changes = t >= 1 ? 1 : 0;
  } else if (t < n) {
    out->searching = 3;
    out->changes = t;
  } else {
    out->converged = 3;
    out->changes = n;
  }
  return 0;
}

__attribute__((destructor)) static void write_export(void) {
  const char* path = getenv("CCLTUNE_EXPORT");
  if (path == NULL || path[0] == '\0' || getenv("RANK") == NULL || strcmp(getenv("RANK"), "0") != 0) return;
  FILE* f = fopen(path, "w");
  if (f == NULL) return;
  fprintf(f, "{\"schema\": 1, \"producer\": \"fake_ccltune.c\", \"configs\": []}\n");
  fclose(f);
}
