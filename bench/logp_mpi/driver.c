/* A driver for Kielmann, Bal and Verstoep's own LogP/MPI library (the paper's code, built by the user
 * outside this project; scripts/vs-logp-mpi builds this file against it with mpicc, CMake never does).
 * Its logp_test prints seconds with 7 decimals (0.1 us), too coarse for figures of 30-700 ns; this driver
 * calls logp_measure() with logp_test's defaults, or the options given, and writes every figure from rank
 * 0 as JSON in ns at full precision, with the wall time logp_measure() took.
 *
 * RTT, RTT_min and the confidence intervals exist only in logp_size_params, which logp_mpi.h declares
 * but calls opaque; its accessors (logp_os, logp_or, logp_g, logp_L) give the rest. The fields are read,
 * never written.
 *
 * usage (2 ranks under mpirun):
 *   logp_driver [-Send|-Isend|-Ssend] [-Recv|-Irecv] [-min-size B] [-max-size B] [-eps E] [-conf-int C]
 *               [-min-its N] [-max-its N] [-max-diff D] [-g-size B] [-static|-dynamic] [-verbose] [-json FILE]
 * The JSON goes to FILE, else to stdout (where -verbose's diagnostics from the library also go). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include "logp_mpi.h"

static const char *usage_text =
    "usage (2 ranks under mpirun): logp_driver [-Send|-Isend|-Ssend] [-Recv|-Irecv] [-min-size B]\n"
    "       [-max-size B] [-eps E] [-conf-int C] [-min-its N] [-max-its N] [-max-diff D] [-g-size B]\n"
    "       [-static|-dynamic] [-verbose] [-json FILE]\n";

static void die(int rank, const char *why, const char *what) {
    if (rank == 0) fprintf(stderr, "logp_driver: %s%s%s\n%s", why, what ? " " : "", what ? what : "", usage_text);
    MPI_Finalize();
    exit(2);
}

static double real_arg(int rank, int argc, char **argv, int *i, double lo, double hi) {
    char *end;
    double v;
    if (*i + 1 >= argc) die(rank, "missing value after", argv[*i]);
    v = strtod(argv[++*i], &end);
    if (end == argv[*i] || *end || !(v >= lo && v <= hi)) die(rank, "value out of range for", argv[*i - 1]);
    return v;
}

/* A time in seconds as ns, or null when the library left it undefined. */
static void ns(FILE *f, const char *key, double seconds, const char *sep) {
    if (isfinite(seconds)) fprintf(f, "\"%s\": %.17g%s", key, seconds * 1e9, sep);
    else fprintf(f, "\"%s\": null%s", key, sep);
}

int main(int argc, char **argv) {
    int rank, nranks, i, err;
    int min_its = LOGP_DEF_MIN_ITS, max_its = LOGP_DEF_MAX_ITS, g_size = 0;
    int min_size = LOGP_DEF_MIN_SIZE, max_size = LOGP_DEF_MAX_SIZE;
    double conf_int = LOGP_DEF_CONF_INT, eps = LOGP_DEF_EPS, max_diff = LOGP_DEF_MAX_DIFF;
    /* logp_test's defaults (not the header's LOGP_DEF_*MODE alone): Send, Recv, dynamic buffers. */
    logp_sendmode send_mode = LOGP_MPI_SEND;
    logp_recvmode recv_mode = LOGP_MPI_RECV;
    logp_bufmode buf_mode = LOGP_BUF_DYNAMIC;
    int diag = LOGP_DIAG_SILENT;
    const char *json = NULL;
    const char *send_name = "Send", *recv_name = "Recv";
    logp_params *logp = NULL;
    double t0, t1;
    char descr[64];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-Send")) { send_mode = LOGP_MPI_SEND; send_name = "Send"; }
        else if (!strcmp(a, "-Isend")) { send_mode = LOGP_MPI_ISEND; send_name = "Isend"; }
        else if (!strcmp(a, "-Ssend")) { send_mode = LOGP_MPI_SSEND; send_name = "Ssend"; }
        else if (!strcmp(a, "-Recv")) { recv_mode = LOGP_MPI_RECV; recv_name = "Recv"; }
        else if (!strcmp(a, "-Irecv")) { recv_mode = LOGP_MPI_IRECV; recv_name = "Irecv"; }
        else if (!strcmp(a, "-static")) buf_mode = LOGP_BUF_STATIC;
        else if (!strcmp(a, "-dynamic")) buf_mode = LOGP_BUF_DYNAMIC;
        else if (!strcmp(a, "-verbose")) diag = LOGP_DIAG_VERBOSE;
        else if (!strcmp(a, "-min-size")) min_size = (int)real_arg(rank, argc, argv, &i, 1, 1 << 26);
        else if (!strcmp(a, "-max-size")) max_size = (int)real_arg(rank, argc, argv, &i, 1, 1 << 26);
        else if (!strcmp(a, "-g-size")) g_size = (int)real_arg(rank, argc, argv, &i, 0, 1 << 26);
        else if (!strcmp(a, "-min-its")) min_its = (int)real_arg(rank, argc, argv, &i, 2, 1 << 20);
        else if (!strcmp(a, "-max-its")) max_its = (int)real_arg(rank, argc, argv, &i, 2, 1 << 20);
        else if (!strcmp(a, "-eps")) eps = real_arg(rank, argc, argv, &i, 1e-6, 1);
        else if (!strcmp(a, "-conf-int")) conf_int = real_arg(rank, argc, argv, &i, 0.5, 0.9999);
        else if (!strcmp(a, "-max-diff")) max_diff = real_arg(rank, argc, argv, &i, 1e-6, 100);
        else if (!strcmp(a, "-json")) {
            if (i + 1 >= argc) die(rank, "missing value after", a);
            json = argv[++i];
        } else die(rank, "unknown option", a);
    }
    if (nranks != 2) die(rank, "runs as exactly 2 ranks (mpirun -np 2)", NULL);
    if (min_size > max_size) die(rank, "-min-size is above -max-size", NULL);
    if (min_its > max_its) die(rank, "-min-its is above -max-its", NULL);
    snprintf(descr, sizeof descr, "logp_driver.%s.%s", send_name, recv_name);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    err = logp_measure(&logp, descr, MPI_COMM_WORLD, 0, 1, g_size, min_its, max_its, conf_int, eps, max_diff,
                       min_size, max_size, LOGP_DEF_DIFF_SIZES, send_mode, recv_mode, buf_mode, LOGP_OPT_NONE,
                       diag);
    t1 = MPI_Wtime();
    if (err != MPI_SUCCESS) {
        fprintf(stderr, "logp_driver: rank %d: logp_measure failed with %d\n", rank, err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    if (rank == 0) {
        FILE *f = json ? fopen(json, "w") : stdout;
        if (!f) {
            fprintf(stderr, "logp_driver: cannot write %s\n", json);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fprintf(f, "{\"tool\": \"LogP/MPI\", \"send\": \"%s\", \"recv\": \"%s\", \"buffers\": \"%s\",\n", send_name,
                recv_name, buf_mode == LOGP_BUF_STATIC ? "static" : "dynamic");
        fprintf(f, " \"eps\": %.10g, \"conf_int\": %.10g, \"max_diff\": %.10g, \"min_its\": %d, \"max_its\": %d,\n",
                eps, conf_int, max_diff, min_its, max_its);
        fprintf(f, " \"min_size\": %d, \"max_size\": %d, \"g_size\": %d, \"mpi_wtick_ns\": %.17g,\n",
                min_size, max_size, g_size, MPI_Wtick() * 1e9);
        fprintf(f, " \"logp_measure_seconds\": %.9f, ", t1 - t0);
        ns(f, "L_ns", logp_L(logp), ",\n");
        fprintf(f, " \"sizes\": [\n");
        for (i = 0; i < logp->nsizes; i++) {
            const logp_size_params *p = &logp->params[i];
            fprintf(f, "  {\"bytes\": %d, ", p->size);
            ns(f, "RTT_ns", p->RTT, ", ");
            ns(f, "RTT_min_ns", p->RTT_min, ", ");
            ns(f, "os_ns", logp_os(logp, p->size), ", ");
            ns(f, "os_cnfint_ns", p->os_cnfint, ", ");
            ns(f, "os_min_ns", p->os_min, ", ");
            ns(f, "or_ns", logp_or(logp, p->size), ", ");
            ns(f, "or_cnfint_ns", p->or_cnfint, ", ");
            ns(f, "or_min_ns", p->or_min, ", ");
            ns(f, "g_ns", logp_g(logp, p->size), "}");
            fprintf(f, "%s\n", i + 1 < logp->nsizes ? "," : "");
        }
        fprintf(f, " ]}\n");
        if (f != stdout && fclose(f) != 0) {
            fprintf(stderr, "logp_driver: writing %s failed\n", json);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        logp_free(logp);
    }
    MPI_Finalize();
    return 0;
}
