/* What both instant engines of benchmarks/peers.py share: line reading, and the log of their own cost.
 *
 * At exit each engine appends to the file named by PEERS_LOG (when set) one line: its user and system CPU in
 * microseconds, the lines it read, the replies it wrote (one reply may be several lines: a round trip) and the
 * searches it answered (one a ply). peers.py sums them to tell the arena's own CPU from the engines'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long lines_read, replies, searches;

static void log_cost(void) {
    const char *path = getenv("PEERS_LOG");
    if (path == NULL)
        return;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    FILE *f = fopen(path, "a");
    if (f == NULL)
        return;
    fprintf(f, "%ld %ld %ld %ld %ld\n", ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec,
            ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec, lines_read, replies, searches);
    fclose(f);
}

/* Writes one reply (one or more lines, already ending in a newline) and flushes it: one round trip. */
static void reply(const char *text) {
    fputs(text, stdout);
    fflush(stdout);
    replies++;
}

/* Counts the words of `line` after the word `after` (the moves or turns of a position command). */
static int count_after(char *line, const char *after) {
    int n = 0, seen = 0;
    for (char *w = strtok(line, " \t\r\n"); w; w = strtok(NULL, " \t\r\n")) {
        if (seen)
            n++;
        else if (strcmp(w, after) == 0)
            seen = 1;
    }
    return n;
}
