/* The corpus walker shared by the corpus-wide tests. */
#include "corpus_walk.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_names(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

static bool is_module(const char *name) {
  size_t len = strlen(name);
  return len >= 5 && (strcmp(name + len - 4, ".hlo") == 0 || strcmp(name + len - 4, ".txt") == 0);
}

int ts_corpus_walk(const char *root, void (*fn)(const char *path, const char *base, void *ctx), void *ctx) {
  DIR *top = opendir(root);
  if (!top) return -1;
  closedir(top);
  static const char *const dirs[] = {"real_hlo", "real_hlo_large", "xla_spmd"};
  int files = 0;
  for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, dirs[k]);
    DIR *dp = opendir(dir);
    if (!dp) continue;
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) && n < 1024)
      if (is_module(e->d_name) && (names[n] = strdup(e->d_name))) n++;
    closedir(dp);
    qsort(names, (size_t)n, sizeof *names, cmp_names);
    for (int j = 0; j < n; j++) {
      char path[8192];
      snprintf(path, sizeof path, "%s/%s", dir, names[j]);
      fn(path, names[j], ctx);
      free(names[j]);
    }
    files += n;
  }
  return files;
}
