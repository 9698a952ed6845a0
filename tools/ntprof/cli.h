/* The ntprof command-line client: a thin layer over libntprof. */
#ifndef NTPROF_CLI_H
#define NTPROF_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include "ntprof/ntprof.h"

/* Exit codes: 0 success, 1 the work failed (bad topology, backend error),
 * 2 bad usage. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Options every command that loads a topology accepts. */
typedef struct cli_topo_opts {
    const char **set;
    int n_set, cap_set;
    int64_t batch;
    /* --precision: a compute precision, and for a command that sets
     * math_modes (run) also tf32, which is f32 storage with math
     * NTP_MATH_TF32. */
    bool set_precision, math_modes;
    ntp_dtype precision;
    ntp_math_mode math;
    int64_t max_memory;
} cli_topo_opts;

/* Parse one of the shared topology options; returns 1 if `opt` was one of
 * them, 0 if not, -1 on a bad value (message printed). */
int cli_topo_option(cli_topo_opts *o, int opt, const char *arg);
void cli_topo_free(cli_topo_opts *o);
ntp_load_opts cli_load_opts(const cli_topo_opts *o);

/* A command's options as one table (cli-options.c): getopt_long's arrays
 * and the --help lines are made from it. Each entry is an option, or a
 * line of help text (CLI_TEXT, with its own "\n"); the table ends with
 * CLI_END. An option either stores its value itself (CLI_STRING, CLI_TRUE,
 * CLI_FALSE, CLI_INT into `field`) or is handed back to the command's
 * switch by its key (CLI_KEY). */
typedef enum cli_opt_kind {
    CLI_END,
    CLI_TEXT,   /* help text only: `help` printed as it is */
    CLI_KEY,    /* cli_getopt returns `key`, optarg set */
    CLI_STRING, /* *(const char **)field = the argument */
    CLI_TRUE,   /* *(bool *)field = true */
    CLI_FALSE,  /* *(bool *)field = false */
    CLI_INT,    /* *(int *)field = an integer in [lo, hi], else
                 * "--NAME expects <expects>, got 'ARG'" */
} cli_opt_kind;

typedef struct cli_option {
    cli_opt_kind kind;
    const char *name; /* long name, without "--" */
    int key;          /* its short letter, or a value >= 256 for a long one only */
    const char *arg;  /* the argument's name in the help ("N"), NULL: takes none */
    /* Help after the option's name; "\n" starts a further line at the
     * help's column. NULL: the option is listed by a CLI_TEXT line. */
    const char *help;
    void *field;
    int64_t lo, hi;      /* CLI_INT's range */
    const char *expects; /* CLI_INT's "a positive integer" */
} cli_option;

/* Table entries, designated so that the fields left out are zero; the
 * conditional checks a field's type without a cast hiding a mistake. */
#define CLI_HELP(text)                   \
    {                                    \
        .kind = CLI_TEXT, .help = (text) \
    }
#define CLI_OPT(nm, k, a, h)                                               \
    {                                                                      \
        .kind = CLI_KEY, .name = (nm), .key = (k), .arg = (a), .help = (h) \
    }
#define CLI_STR(nm, k, a, h, p)                                                \
    {                                                                          \
        .kind = CLI_STRING, .name = (nm), .key = (k), .arg = (a), .help = (h), \
        .field = (void *)(1 ? (p) : (const char **)0)                          \
    }
#define CLI_SET(nm, k, h, p)                                     \
    {                                                            \
        .kind = CLI_TRUE, .name = (nm), .key = (k), .help = (h), \
        .field = (void *)(1 ? (p) : (bool *)0)                   \
    }
#define CLI_UNSET(nm, k, h, p)                                    \
    {                                                             \
        .kind = CLI_FALSE, .name = (nm), .key = (k), .help = (h), \
        .field = (void *)(1 ? (p) : (bool *)0)                    \
    }
#define CLI_NUM(nm, k, a, h, p, l, u, e)                                            \
    {                                                                               \
        .kind = CLI_INT, .name = (nm), .key = (k), .arg = (a), .help = (h),         \
        .field = (void *)(1 ? (p) : (int *)0), .lo = (l), .hi = (u), .expects = (e) \
    }
#define CLI_OPT_END     \
    {                   \
        .kind = CLI_END \
    }

enum { CLI_MAX_OPTIONS = 64 };

/* getopt_long's arrays, made on the first call of cli_getopt. */
typedef struct cli_getopt_state {
    bool built;
    struct option longs[CLI_MAX_OPTIONS];
    char shorts[2 * CLI_MAX_OPTIONS + 2];
} cli_getopt_state;

/* The next option of argv by table t (start with a zeroed state): its key
 * for a CLI_KEY option, -1 after the last, CLI_OPT_BAD after printing what
 * was wrong with a value, '?' for an option getopt refused (getopt said
 * why). Options that store their value are handled inside. */
enum { CLI_OPT_BAD = -2 };
int cli_getopt(int argc, char **argv, const cli_option *t, cli_getopt_state *st);
/* The option lines of t's help: "  -s, --set NAME=VALUE", the help from
 * column `col` (two spaces after a name reaching it). */
void cli_usage(FILE *f, const cli_option *t, int col);

/* Print "ntprof: <message>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the context's warnings (they may explain the failure), then the
 * library's last error in one line, and return CLI_FAIL. */
int cli_fail(ntp_ctx *ctx);
/* msg with the library's option names (ntp_run_opts.threads) replaced by the
 * CLI's flags (--threads), in buf; msg itself when it does not fit
 * (cli-messages.c). */
const char *cli_message(const char *msg, char *buf, size_t len);
/* The context's last error in the CLI's words, made from its parts
 * (ntp_ctx_error_part): the option at fault named by its flag, the rest as
 * cli_message words it; in buf, or the library's message when it does not
 * fit. */
const char *cli_errmsg(const ntp_ctx *ctx, char *buf, size_t len);
/* A new context, or NULL after printing "out of memory". */
ntp_ctx *cli_ctx_new(void);
/* Check the FILE arguments left after the options of command `cmd`: none
 * (want 0) or exactly one (want 1, described as `what`, e.g. "a topology
 * FILE"). On a mismatch prints the usage error and returns false. */
bool cli_want_files(const char *cmd, int argc, char **argv, int want, const char *what);
/* Print the context's warnings to stderr. */
void cli_print_warnings(ntp_ctx *ctx);
/* After a run whose report holds its warnings: a table written to stdout
 * ends with them, so they are dropped from the context rather than
 * printed twice; otherwise (a file, JSON, CSV) they go to stderr once. */
void cli_report_warnings(ntp_ctx *ctx, bool table_on_stdout);
/* Parse --format's value; false after printing the usage error. */
bool cli_parse_format(const char *s, ntp_format *out);
/* Parse a size into bytes: "123", "123B", binary "64M", "64MiB", "2GiB",
 * decimal "64MB" (64e6), "2GB"; false for a negative, malformed or unknown
 * unit ("10Mb", "10x"). */
bool cli_parse_size(const char *s, int64_t *out);
bool cli_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out);
bool cli_parse_double(const char *s, double lo, double hi, double *out);

/* A --backend list with each name spelled as this build spells it:
 * backend names match case-insensitively ("oneDNN" is onednn). A name
 * that matches none is kept for the library's error and suggestion.
 * Returns buf, or list itself when buf is too small. */
const char *cli_backend_names(const char *list, char *buf, size_t len);
/* A --place LAYER=BACKEND argument checked for its '=' (false after the
 * error line) and its backend spelled as the build spells it, in place. */
bool cli_place_arg(char *arg);

/* Write a report through a callback into -o FILE (atomically) or stdout. */
typedef ntp_status (*cli_writer)(ntp_ctx *ctx, const void *arg, ntp_format fmt, FILE *f);
int cli_write_output(ntp_ctx *ctx, const char *path, cli_writer w, const void *arg, ntp_format fmt);
/* Check a command's outputs (pairs of option and path, NULL paths skipped)
 * against each other and its inputs before any work (ntp_output_check):
 * CLI_OK, or the one-line error and CLI_FAIL. */
int cli_check_outputs(ntp_ctx *ctx, const ntp_output_path *outs, int n_out,
                      const char *const *inputs, int n_in);
/* The history database a command writes, as an output for cli_check_outputs
 * (no report over it): the --db path, else the default history's path (put
 * in buf), and no path with --no-db or when there is no default (the
 * reason left in ctx). */
ntp_output_path cli_db_output(ntp_ctx *ctx, const char *db, bool use_db, char *buf, size_t len);
/* Before a command that will record reads the history at db (ceilings,
 * calibrations): an existing SQLite history of an older schema is migrated
 * now, as the recording would migrate it, so that what is read first is
 * read (opened read-only, an older history is refused). A missing file is
 * not created, a URL is left to the reader (it opens a shared store for
 * writing), and a history that cannot be written is left as it is: the
 * read that follows says why. */
void cli_db_migrate(ntp_ctx *ctx, const char *db);

/* Progress on a terminal (cli-progress.c): one line on stderr, redrawn in
 * place, shown only when stderr is a terminal; nothing otherwise. */
typedef struct cli_progress {
    bool tty, shown;
    double t0, phase_t0, last_draw;
    char phase[48];
} cli_progress;
void cli_progress_init(cli_progress *p);
/* "ntprof: [=====>   ] 3/10 measure ETA 0:12 (0:05 elapsed)  label";
 * total 0 for a phase without a count. Redraws at most ten times a second
 * (a new phase and the last step always). The ETA is the phase's. */
void cli_progress_show(cli_progress *p, const char *phase, int done, int total, const char *label);
/* Erase the line, before a report or a message goes to the terminal. */
void cli_progress_clear(cli_progress *p);
/* Seconds on the monotonic clock; "m:ss" or "h:mm:ss". */
double cli_now_s(void);
void cli_duration(double s, char *buf, size_t len);

int cmd_analyze(int argc, char **argv);
int cmd_run(int argc, char **argv);

/* Prediction beside measurement (cmd-predict.c): when the history at db
 * holds this machine's calibration of r's backend and precision, fill r's
 * predicted times; false (a warning printed on a history problem) when
 * not. */
bool cli_attach_prediction(ntp_ctx *ctx, const char *db, const ntp_graph *g, ntp_run_result *r,
                           const char *const *place, int n_place);

/* The start every command that reads one topology FILE shares, called after
 * its option loop (cmd-analyze.c, cmd-convert.c, cmd-export.c,
 * cmd-generate.c, cmd-predict.c, cmd-train.c): wants exactly one FILE (`what`
 * names it, e.g. "a topology FILE"), makes the context, turns the topology
 * options into load options and checks the outputs against each other and
 * the FILE before anything is read. CLI_OK with *ctx (the caller frees it)
 * and *lo set; otherwise the error is printed, nothing is left to free and
 * the exit code is returned (CLI_USAGE for the FILE, CLI_FAIL else). */
int cli_begin_topology_command(const char *cmd, const char *what, int argc, char **argv,
                               const cli_topo_opts *topo, const ntp_output_path *outs, int n_out,
                               ntp_ctx **ctx, ntp_load_opts *lo);

/* The end every command's option switch shares, its `default:` for the keys
 * it does not handle itself: -h prints the help of table t (from column
 * help_col) to stdout and gives CLI_OK; CLI_OPT_BAD (the value's error
 * printed) gives CLI_USAGE; anything else is an option getopt refused
 * (getopt said why), so "see 'ntprof CMD --help'" is printed and CLI_USAGE
 * returned. The command returns what this returns. */
int cli_option_end(const char *cmd, int opt, const cli_option *t, int help_col);

/* The options ntprof run and ntprof load share beside the topology's:
 * --backend (each name spelled as this build spells it, cli_backend_names),
 * --seed, --format and --trace. Their tables list --seed and --trace under
 * these keys. */
enum { CLI_OPT_SEED = 900, CLI_OPT_TRACE };
typedef struct cli_run_opts {
    const char *backend; /* NULL: the library's default */
    bool set_seed;
    uint64_t seed;
    ntp_format fmt; /* NTP_FORMAT_TABLE unless --format */
    const char *trace;
    char backend_buf[1024];
} cli_run_opts;
/* Parse one of them or of the topology options (cli_topo_option): 1 if
 * `opt` was one, 0 if not, -1 on a bad value (message printed). */
int cli_run_option(cli_run_opts *o, cli_topo_opts *topo, int opt, const char *arg);
/* After a run's report is out, its record in history db failed (the
 * reason in ctx): a shared store (a URL) fails the command (cli_fail's
 * code); a local one warns, and CLI_OK is returned (docs/history.md). */
int cli_record_failed(ntp_ctx *ctx, const char *db);

#endif
