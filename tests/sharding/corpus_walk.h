/* Walks the HLO modules of ../shared/corpus for the corpus-wide tests. */
#ifndef TS_CORPUS_WALK_H
#define TS_CORPUS_WALK_H

/* Calls fn(path, base name, ctx) for every .hlo/.txt module in the
 * real_hlo, real_hlo_large and xla_spmd folders of `root`, in name order
 * within each folder (a stable report). Returns the number of files, or -1
 * when `root` does not exist (the test then exits 77: skipped). */
int ts_corpus_walk(const char *root, void (*fn)(const char *path, const char *base, void *ctx), void *ctx);

#endif
