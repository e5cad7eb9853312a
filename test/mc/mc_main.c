/* SPDX-License-Identifier: MIT */
/* The command line shared by every model program (model_*.c): which
 * models to run, in which memory modes, and which failure a seeded-bug
 * build must report. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"

/* --expect names (short forms of the failure kinds). */
static int kind_of(const char *prog, const char *name)
{
    static const char *const names[] = {
        "ok",  "assert",      "deadlock", "livelock", "race",   "leak",
        "uaf", "double-free", "bad-free", "steps",    "nondet", "usage"};
    _Static_assert(sizeof names / sizeof names[0] == MC_FAIL__COUNT,
                   "one name per failure kind");
    for (int k = 1; k < MC_FAIL__COUNT; k++)
        if (!strcmp(name, names[k]))
            return k;
    fprintf(stderr, "%s: unknown failure kind '%s'\n", prog, name);
    exit(2);
}

static int usage(const char *prog, const struct mc_model *models, size_t n)
{
    fprintf(stderr,
            "usage: %s [--expect KIND] [--mem sc|tso] "
            "[MODEL...]\nmodels:",
            prog);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", models[i].name);
    fprintf(stderr, "\n");
    return 2;
}

static const struct mc_model *find_model(const struct mc_model *models,
                                         size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(models[i].name, name))
            return &models[i];
    return NULL;
}

int mc_model_main(const char *prog, const struct mc_model *models, size_t n,
                  int argc, char **argv)
{
    int expect = 0, mems[2] = {MC_MEM_SC, MC_MEM_TSO}, nmem = 2;
    const struct mc_model **sel = calloc(n, sizeof *sel);
    size_t nsel = 0;
    if (!sel)
        return 2;
    for (int i = 1; i < argc; i++) {
        const struct mc_model *m;
        if (!strcmp(argv[i], "--expect") && i + 1 < argc) {
            expect = kind_of(prog, argv[++i]);
        } else if (!strcmp(argv[i], "--mem") && i + 1 < argc) {
            i++;
            mems[0] = !strcmp(argv[i], "tso") ? MC_MEM_TSO : MC_MEM_SC;
            nmem = 1;
        } else if ((m = find_model(models, n, argv[i])) && nsel < n) {
            sel[nsel++] = m;
        } else {
            free(sel);
            return usage(prog, models, n);
        }
    }
    if (!nsel)
        for (size_t i = 0; i < n; i++)
            sel[nsel++] = &models[i];
    int failed = 0, caught = 0;
    for (size_t i = 0; i < nsel; i++)
        for (int m = 0; m < nmem; m++) {
            struct mc_opts o = mc_defaults(mems[m]);
            o.preempt = sel[i]->preempt;
            int r = mc_check(sel[i]->name, sel[i]->body, &o);
            if (r && expect && r != expect) {
                printf("%s: expected '%s', got '%s'\n", prog,
                       mc_fail_name(expect), mc_fail_name(r));
                abort();
            }
            failed += r != 0;
            caught += r != 0 && r == expect;
        }
    free(sel);
    return expect ? caught > 0 : failed > 0;
}

/* The library's misuse report (fut/core.h: fut_drop of NULL, ...): a
 * programming error in the model fails the execution. */
void fut__misuse(const char *fn, const char *what, const void *caller);
void fut__misuse(const char *fn, const char *what, const void *caller)
{
    (void)caller;
    mc__assert(0, what, fn, __FILE__, __LINE__);
    abort();
}
