/* bench_output.c — what `plumb bench` prints: a markdown table like llama-bench's, CSV, or one
 * JSON document with the machine, the build, the probes and every row. No measuring here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#ifndef PLUMB_GIT_COMMIT
#define PLUMB_GIT_COMMIT "unknown"
#endif
#ifndef PLUMB_BUILD_TYPE
#define PLUMB_BUILD_TYPE "unknown"
#endif

static const char *compiler(void)
{
#define STR2(x) #x
#define STR(x)  STR2(x)
#if defined(__clang__)
    return "clang " STR(__clang_major__) "." STR(__clang_minor__) "." STR(__clang_patchlevel__);
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown";
#endif
}

double bench_load_avg(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double v = -1;
    if (f && fscanf(f, "%lf", &v) != 1) v = -1;
    if (f) fclose(f);
    return v;
}

const bench_probe *bench_find_probe(const bench_report *rep, int n_threads)
{
    for (int i = 0; i < rep->n_probes; i++)
        if (rep->probes[i].n_threads == n_threads) return &rep->probes[i];
    return NULL;
}

/* ---- markdown and csv, row by row ---- */

static void fmt_pct(char *b, size_t cap, double v)
{
    if (v > 0 && isfinite(v))
        snprintf(b, cap, "%.1f", v);
    else
        snprintf(b, cap, "-");
}

static void fmt_count(char *b, size_t cap, double n)
{
    if (n >= 1e9)
        snprintf(b, cap, "%.2f B", n * 1e-9);
    else
        snprintf(b, cap, "%.2f M", n * 1e-6);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Whole numbers as integers ("1234567890", not "1.23457e+09"), others at 6 digits. */
static void csv_num(FILE *f, double v, int valid)
{
    if (!valid || !isfinite(v)) return;
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.6g", v);
}

static const char *const csv_header =
    "model,path,arch,ftype,size_bytes,n_params,kernels_requested,kernels,n_threads,repacked,"
    "repack_set,n_repacked,repack_bytes,repack_ms,load_ms,test,n_prompt,n_gen,reps,"
    "prefill_chunk,kv_type,tok_s_median,"
    "tok_s_min,tok_s_max,latency_p50_ms,latency_p90_ms,latency_p99_ms,peak_rss,"
    "peak_rss_scope,step_weight_bytes,avg_n_past,bytes_per_token,read_gbps,roofline_pct,"
    "macs_per_token,int8_gops,int8_pct,depth,background_load,attention_share,wait_share,"
    "serial_share,runs_per_token,benched_runs\n";

/* Some test runs with busy processes beside it: md shows a "load" column. */
static int any_bg_load(const bench_opts *o)
{
    for (int i = 0; i < o->n_bg_load; i++)
        if (o->bg_load[i] > 0) return 1;
    return 0;
}

void bench_print_header(FILE *f, const bench_opts *o)
{
    if (o->format == BENCH_CSV) fputs(csv_header, f);
    if (o->format != BENCH_MD) return;
    int load = any_bg_load(o);
    fprintf(
        f,
        "| model | size | params | kernels | threads | repack |%s test | t/s median (min-max) "
        "| p50 ms | p99 ms | %% roofline | %% int8 peak |\n"
        "| --- | ---: | ---: | --- | ---: | --- |%s ---: | ---: | ---: | ---: | ---: | ---: |\n",
        load ? " load |" : "", load ? " ---: |" : "");
}

static void print_csv_row(FILE *f, const bench_row *r)
{
    const pl_model_info *mi = &r->mi;
    csv_str(f, r->name);
    fputc(',', f);
    csv_str(f, r->path);
    fprintf(f, ",%s,%s,%llu,%llu,", mi->arch, r->ftype, (unsigned long long)mi->weight_bytes,
            (unsigned long long)mi->n_params);
    csv_str(f, r->kernels_requested ? r->kernels_requested : "");
    fprintf(f, ",%s,%d,%d,%s,%d,%llu,%.3f,%.3f,%s,%lld,%lld,%d,%lld,%s,", r->kernels, r->n_threads,
            r->repacked, mi->repack_set, mi->n_repacked, (unsigned long long)mi->repack_bytes,
            mi->repack_ms, r->load_ms, r->test, (long long)r->n_prompt, (long long)r->n_gen,
            r->reps, (long long)r->chunk, r->kv_bytes == 4 ? "f32" : "f16");
    fprintf(f, "%.6g,%.6g,%.6g,", r->tok_s_med, r->tok_s_min, r->tok_s_max);
    csv_num(f, r->lat_p50, r->has_latency);
    fputc(',', f);
    csv_num(f, r->lat_p90, r->has_latency);
    fputc(',', f);
    csv_num(f, r->lat_p99, r->has_latency);
    fprintf(f, ",%llu,%s,%llu,", (unsigned long long)r->peak_rss,
            r->peak_rss_scope_model ? "model" : "process",
            (unsigned long long)mi->step_weight_bytes);
    csv_num(f, r->avg_n_past, r->n_gen > 0);
    fputc(',', f);
    csv_num(f, r->bytes_per_token, r->n_gen > 0);
    fputc(',', f);
    csv_num(f, r->read_gbps, r->read_gbps > 0);
    fputc(',', f);
    csv_num(f, r->roofline_pct, r->roofline_pct > 0);
    fputc(',', f);
    csv_num(f, r->macs_per_token, 1);
    fputc(',', f);
    csv_num(f, r->int8_gops, r->int8_gops > 0);
    fputc(',', f);
    csv_num(f, r->int8_pct, r->int8_pct > 0);
    fprintf(f, ",%lld,%d,", (long long)r->depth, r->bg_load);
    csv_num(f, r->attention_share, r->attention_share >= 0);
    fputc(',', f);
    csv_num(f, r->wait_share, r->wait_share >= 0);
    fputc(',', f);
    csv_num(f, r->serial_share, r->serial_share >= 0);
    fprintf(f, ",%.4g,%llu\n", r->runs_per_token, (unsigned long long)r->benched_runs);
}

void bench_print_row(FILE *f, const bench_opts *o, const bench_row *r)
{
    if (o->format == BENCH_CSV) print_csv_row(f, r);
    if (o->format != BENCH_MD) return;
    char size[32], params[32], roof[16], i8[16], p50[16] = "-", p99[16] = "-";
    cli_format_size(size, sizeof size, r->mi.weight_bytes);
    fmt_count(params, sizeof params, (double)r->mi.n_params);
    fmt_pct(roof, sizeof roof, r->roofline_pct);
    fmt_pct(i8, sizeof i8, r->int8_pct);
    if (r->has_latency) {
        snprintf(p50, sizeof p50, "%.2f", r->lat_p50);
        snprintf(p99, sizeof p99, "%.2f", r->lat_p99);
    }
    fputs("| ", f);
    for (const char *c = r->name;;) { /* a '|' would end the cell */
        size_t run = strcspn(c, "|");
        cli_put_escaped(f, c, run);
        if (!c[run]) break;
        fputs("\\|", f);
        c += run + 1;
    }
    if (!strstr(r->name, r->ftype)) fprintf(f, " %s", r->ftype); /* "m Q8_0", not "m-Q8_0 Q8_0" */
    fprintf(f, " | %s | %s | %s | %d | %s |", size, params, r->kernels, r->n_threads,
            r->repacked ? "yes" : "no");
    if (any_bg_load(o)) fprintf(f, " %d |", r->bg_load);
    fprintf(f, " %s | %.2f (%.2f-%.2f) | %s | %s | %s | %s |\n", r->test, r->tok_s_med,
            r->tok_s_min, r->tok_s_max, p50, p99, roof, i8);
}

/* ---- the markdown footer: build, probes, loads ---- */

static void print_md_footer(FILE *f, const bench_report *rep)
{
    fprintf(f, "\nbuild: %s (%s, %s), plumb %s\n", PLUMB_GIT_COMMIT, compiler(), PLUMB_BUILD_TYPE,
            pl_version());
    if (rep->load_avg[0] >= 0 && rep->load_avg[1] >= 0)
        fprintf(f, "load average (1 min): %.2f at the start, %.2f at the end\n", rep->load_avg[0],
                rep->load_avg[1]);
    if (any_bg_load(rep->o))
        fprintf(f,
                "background load: the \"load\" column's number of busy processes ran on the "
                "bench's CPUs (%s) during each test\n",
                rep->bg_cpus[0] ? rep->bg_cpus : "?");
    for (int i = 0; i < rep->n_probes; i++) {
        const bench_probe *p = &rep->probes[i];
        if (i == 0 && p->binding_text) {
            size_t n = strcspn(p->binding_text, "\n");
            fprintf(f, "%.*s\n", (int)n, p->binding_text);
        }
        if (!p->measured) continue;
        fprintf(f, "probe, %d thread(s), %d pinned (PU", p->n_threads, p->pinned);
        for (int t = 0; t < p->n_threads; t++) fprintf(f, "%s%d", t ? "," : " ", p->pus[t]);
        fprintf(f, "): read %.1f GB/s (median %.1f, %d passes over %.0f MiB, %s)", p->read_gbps,
                p->read_gbps_median, p->passes, (double)p->buffer_bytes / 1048576.0,
                p->read_kernel);
        if (p->int8_gops > 0)
            fprintf(f, ", int8 %.0f Gop/s (median %.0f, %s)", p->int8_gops, p->int8_gops_median,
                    p->int8_kernel);
        fputc('\n', f);
    }
    for (int i = 0; i < rep->n_rows; i++) {
        const bench_row *r = &rep->rows[i];
        if (i > 0 && rep->rows[i - 1].path == r->path &&
            rep->rows[i - 1].kernels_requested == r->kernels_requested)
            continue; /* one line per load */
        char rb[32];
        cli_format_size(rb, sizeof rb, r->mi.repack_bytes);
        fputs("load: ", f);
        cli_put_escaped(f, r->name, strlen(r->name));
        fprintf(f, " [%s]: %.0f ms", r->kernels_requested ? r->kernels_requested : "default",
                r->load_ms);
        if (r->mi.repack_set[0])
            fprintf(f, ", repacked %d tensors for %s (%s) in %.0f ms", r->mi.n_repacked,
                    r->mi.repack_set, rb, r->mi.repack_ms);
        else
            fputs(", no repacking", f);
        char rss[32];
        cli_format_size(rss, sizeof rss, r->peak_rss);
        fprintf(f, "; peak RSS %s\n", rss);
    }
}

/* ---- json ---- */

static void jstr(FILE *f, const char *s)
{
    cli_put_json_string(f, s, strlen(s));
}

static void jnum(FILE *f, double v, int valid)
{
    if (valid && isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

/* "key": value of the first /proc/cpuinfo line starting with key, into buf. */
static int cpuinfo_field(const char *key, char *buf, size_t cap)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    size_t kn = strlen(key);
    char *line = NULL;
    size_t lcap = 0;
    int found = 0;
    while (!found && getline(&line, &lcap, f) > 0) {
        if (strncmp(line, key, kn) != 0 || (line[kn] != ' ' && line[kn] != '\t' && line[kn] != ':'))
            continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ') v++;
        v[strcspn(v, "\n")] = '\0';
        snprintf(buf, cap, "%s", v);
        found = 1;
    }
    free(line);
    fclose(f);
    return found;
}

static void print_machine(FILE *f, const bench_report *rep)
{
    char buf[8192];
    fputs("  \"machine\": {\n    \"cpu\": ", f);
    jstr(f, cpuinfo_field("model name", buf, sizeof buf) ? buf : "unknown");
    fputs(",\n    \"flags\": [", f);
    if (cpuinfo_field("flags", buf, sizeof buf) || cpuinfo_field("Features", buf, sizeof buf)) {
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            fputs(n++ ? ", " : "", f);
            jstr(f, tok);
        }
    }
    fputs("],\n    \"topology\": ", f);
    if (rep->n_probes > 0 && rep->probes[0].binding_text) {
        const char *t = rep->probes[0].binding_text;
        cli_put_json_string(f, t, strcspn(t, "\n"));
    } else {
        fputs("null", f);
    }
    fputs(",\n    \"load_avg_start\": ", f);
    jnum(f, rep->load_avg[0], rep->load_avg[0] >= 0);
    fputs(", \"load_avg_end\": ", f);
    jnum(f, rep->load_avg[1], rep->load_avg[1] >= 0);
    fputs(",\n    \"bindings\": [", f);
    for (int i = 0; i < rep->n_probes; i++) {
        fputs(i ? ",\n      " : "\n      ", f);
        fputs(rep->probes[i].binding_json ? rep->probes[i].binding_json : "null", f);
    }
    fputs(rep->n_probes ? "\n    ]\n  },\n" : "]\n  },\n", f);
}

static void print_build_config(FILE *f, const bench_report *rep)
{
    const bench_opts *o = rep->o;
    fputs("  \"build\": {\"commit\": ", f);
    jstr(f, PLUMB_GIT_COMMIT);
    fputs(", \"compiler\": ", f);
    jstr(f, compiler());
    fputs(", \"build_type\": ", f);
    jstr(f, PLUMB_BUILD_TYPE);
    fputs(", \"version\": ", f);
    jstr(f, pl_version());
    fputs("},\n  \"config\": {\"models\": [", f);
    for (int i = 0; i < o->n_models; i++) {
        fputs(i ? ", " : "", f);
        jstr(f, o->models[i]);
    }
    fputs("], \"kernels\": [", f);
    for (int i = 0; i < o->n_kernels; i++) {
        fputs(i ? ", " : "", f);
        if (o->kernels[i])
            jstr(f, o->kernels[i]);
        else
            fputs("null", f);
    }
    fputs("], \"n_prompt\": [", f);
    for (int i = 0; i < o->n_pp; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)o->pp[i]);
    fputs("], \"n_gen\": [", f);
    for (int i = 0; i < o->n_tg; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)o->tg[i]);
    fputs("], \"threads\": [", f);
    for (int i = 0; i < o->n_threads; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)o->threads[i]);
    fputs("], \"depth\": [", f);
    for (int i = 0; i < o->n_depth; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)o->depth[i]);
    fputs("], \"background_load\": [", f);
    for (int i = 0; i < o->n_bg_load; i++)
        fprintf(f, "%s%lld", i ? ", " : "", (long long)o->bg_load[i]);
    fprintf(f, "], \"repetitions\": %lld, \"warmup\": 1, \"repack\": %s, \"tg_prompt\": 1",
            (long long)o->reps, o->no_repack ? "false" : "true");
    fputs(", \"background_load_cpus\": ", f);
    jstr(f, rep->bg_cpus);
    fputs("},\n", f);
}

static void print_probes(FILE *f, const bench_report *rep)
{
    const bench_probe *first = NULL;
    for (int i = 0; i < rep->n_probes; i++)
        if (rep->probes[i].measured && !first) first = &rep->probes[i];
    fprintf(f,
            "  \"probes\": {\"measured\": %s, \"read_buffer_bytes\": %llu, \"read_passes\": %d, "
            "\"read_kernel\": ",
            first ? "true" : "false", first ? (unsigned long long)first->buffer_bytes : 0ull,
            first ? first->passes : 0);
    jstr(f, bench_read_kernel_name());
    fputs(", \"int8_kernel\": ", f);
    jstr(f, bench_int8_kernel_name());
    for (int pass = 0; pass < 2; pass++) {
        fputs(pass ? ",\n    \"int8_gops\": [" : ",\n    \"read_gbps\": [", f);
        int n = 0;
        for (int i = 0; i < rep->n_probes; i++) {
            const bench_probe *p = &rep->probes[i];
            if (!p->measured) continue;
            fprintf(f, "%s{\"n_threads\": %d, \"best\": ", n++ ? ",\n      " : "\n      ",
                    p->n_threads);
            jnum(f, pass ? p->int8_gops : p->read_gbps, pass ? p->int8_gops > 0 : 1);
            fputs(", \"median\": ", f);
            jnum(f, pass ? p->int8_gops_median : p->read_gbps_median, pass ? p->int8_gops > 0 : 1);
            fprintf(f, ", \"pinned\": %d, \"pus\": [", p->pinned);
            for (int t = 0; t < p->n_threads; t++) fprintf(f, "%s%d", t ? ", " : "", p->pus[t]);
            fputs("]}", f);
        }
        fputs(n ? "\n    ]" : "]", f);
    }
    fputs("\n  },\n", f);
}

static void print_json_row(FILE *f, const bench_row *r)
{
    const pl_model_info *mi = &r->mi;
    fputs("    {\"model\": ", f);
    jstr(f, r->name);
    fputs(", \"path\": ", f);
    jstr(f, r->path);
    fputs(", \"arch\": ", f);
    jstr(f, mi->arch);
    fprintf(f,
            ", \"ftype\": \"%s\", \"size_bytes\": %llu, \"file_bytes\": %llu, "
            "\"n_params\": %llu,\n     \"kernels_requested\": ",
            r->ftype, (unsigned long long)mi->weight_bytes, (unsigned long long)r->file_bytes,
            (unsigned long long)mi->n_params);
    if (r->kernels_requested)
        jstr(f, r->kernels_requested);
    else
        fputs("null", f);
    fprintf(f, ", \"kernels\": \"%s\", \"n_threads\": %d, \"repacked\": %s, \"repack\": {\"set\": ",
            r->kernels, r->n_threads, r->repacked ? "true" : "false");
    jstr(f, mi->repack_set);
    fprintf(f, ", \"n_tensors\": %d, \"bytes\": %llu, \"ms\": ", mi->n_repacked,
            (unsigned long long)mi->repack_bytes);
    jnum(f, mi->repack_ms, 1);
    fputs("}, \"load_ms\": ", f);
    jnum(f, r->load_ms, 1);
    fprintf(f,
            ",\n     \"test\": \"%s\", \"n_prompt\": %lld, \"n_gen\": %lld, \"depth\": %lld, "
            "\"background_load\": %d, \"reps\": %d, \"prefill_chunk\": %lld, \"kv_type\": \"%s\",\n"
            "     \"tok_s\": {\"median\": ",
            r->test, (long long)r->n_prompt, (long long)r->n_gen, (long long)r->depth, r->bg_load,
            r->reps, (long long)r->chunk, r->kv_bytes == 4 ? "f32" : "f16");
    jnum(f, r->tok_s_med, 1);
    fputs(", \"min\": ", f);
    jnum(f, r->tok_s_min, 1);
    fputs(", \"max\": ", f);
    jnum(f, r->tok_s_max, 1);
    fputs(", \"samples\": [", f);
    for (int i = 0; i < r->reps; i++) {
        fputs(i ? ", " : "", f);
        jnum(f, r->tok_s[i], 1);
    }
    fputs("]},\n     \"latency_ms\": ", f);
    if (r->has_latency) {
        fputs("{\"p50\": ", f);
        jnum(f, r->lat_p50, 1);
        fputs(", \"p90\": ", f);
        jnum(f, r->lat_p90, 1);
        fputs(", \"p99\": ", f);
        jnum(f, r->lat_p99, 1);
        if (r->lat_samples) {
            fputs(", \"samples\": [", f);
            for (size_t i = 0; i < r->n_lat_samples; i++) {
                fputs(i ? ", " : "", f);
                jnum(f, r->lat_samples[i], 1);
            }
            fputs("]", f);
        }
        fputs("}", f);
    } else {
        fputs("null", f);
    }
    fprintf(f,
            ", \"peak_rss\": %llu, \"peak_rss_scope\": \"%s\",\n     \"step_weight_bytes\": %llu",
            (unsigned long long)r->peak_rss, r->peak_rss_scope_model ? "model" : "process",
            (unsigned long long)mi->step_weight_bytes);
    fputs(", \"avg_n_past\": ", f);
    jnum(f, r->avg_n_past, r->n_gen > 0);
    fputs(", \"attention_share\": ", f);
    jnum(f, r->attention_share, r->attention_share >= 0);
    fputs(", \"wait_share\": ", f);
    jnum(f, r->wait_share, r->wait_share >= 0);
    fputs(", \"serial_share\": ", f);
    jnum(f, r->serial_share, r->serial_share >= 0);
    fprintf(f, ", \"runs_per_token\": %.4g, \"benched_runs\": %llu", r->runs_per_token,
            (unsigned long long)r->benched_runs);
    fputs(", \"bytes_per_token\": ", f);
    jnum(f, r->bytes_per_token, r->n_gen > 0);
    fputs(", \"read_gbps\": ", f);
    jnum(f, r->read_gbps, r->read_gbps > 0);
    fputs(", \"roofline_pct\": ", f);
    jnum(f, r->roofline_pct, r->roofline_pct > 0);
    fputs(",\n     \"macs_per_token\": ", f);
    jnum(f, r->macs_per_token, 1);
    fputs(", \"int8_gops\": ", f);
    jnum(f, r->int8_gops, r->int8_gops > 0);
    fputs(", \"int8_pct\": ", f);
    jnum(f, r->int8_pct, r->int8_pct > 0);
    fputs("}", f);
}

void bench_print_footer(FILE *f, const bench_report *rep)
{
    if (rep->o->format == BENCH_MD) print_md_footer(f, rep);
    if (rep->o->format != BENCH_JSON) return;
    fputs("{\n", f);
    print_machine(f, rep);
    print_build_config(f, rep);
    print_probes(f, rep);
    fputs("  \"results\": [", f);
    for (int i = 0; i < rep->n_rows; i++) {
        fputs(i ? ",\n" : "\n", f);
        print_json_row(f, &rep->rows[i]);
    }
    fputs(rep->n_rows ? "\n  ]\n}\n" : "]\n}\n", f);
}
