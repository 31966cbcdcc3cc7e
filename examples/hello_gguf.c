/* hello_gguf.c — the smallest program built on libplumb: opens a GGUF file and prints its
 * tensor count, or the library's error. `--write FILE` first makes a tiny one to open. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <plumb.h>

/* A two-tensor GGUF written with the writer API, so no test needs a checked-in binary. */
static pl_status write_tiny(const char *path, pl_error *err)
{
    static const float norm[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    static const float embd[4 * 2] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f};
    const int64_t ne_norm[1] = {4}, ne_embd[2] = {4, 2};
    pl_gguf_writer *w = NULL;
    pl_status st = pl_gguf_writer_new(&w, 3, err);
    if (st == PL_OK) st = pl_gguf_writer_set_string(w, "general.architecture", "hello", 5, err);
    if (st == PL_OK) st = pl_gguf_writer_set_u32(w, "hello.block_count", 1, err);
    if (st == PL_OK)
        st = pl_gguf_writer_add_tensor(w, "token_embd.weight", PL_TYPE_F32, 2, ne_embd, embd, err);
    if (st == PL_OK)
        st = pl_gguf_writer_add_tensor(w, "output_norm.weight", PL_TYPE_F32, 1, ne_norm, norm, err);
    if (st == PL_OK) st = pl_gguf_writer_write_file(w, path, err);
    pl_gguf_writer_free(w);
    return st;
}

int main(int argc, char **argv)
{
    pl_error err = {PL_OK, ""};
    const char *path = argc == 2 ? argv[1] : NULL;
    if (argc == 3 && strcmp(argv[1], "--write") == 0) {
        path = argv[2];
        pl_status st = write_tiny(path, &err);
        if (st != PL_OK) {
            fprintf(stderr, "hello_gguf: %s: %s\n", pl_status_str(st), err.msg);
            return 1;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: hello_gguf [--write] FILE.gguf\n");
        return 2;
    }

    pl_gguf *g = NULL;
    pl_status st = pl_gguf_open(&g, path, &err);
    if (st != PL_OK) {
        fprintf(stderr, "hello_gguf: %s: %s\n", pl_status_str(st), err.msg);
        return 1;
    }
    printf("%s: %llu tensors (plumb %s)\n", path, (unsigned long long)pl_gguf_n_tensors(g),
           pl_version());
    pl_gguf_free(g);
    return 0;
}
