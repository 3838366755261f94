/* An instant UCI engine for benchmarks/peers.py: every game follows the same quiet line of moves (the arena ends
 * it at its move limit: 16 plies), each `go` answered at once. */
#include "common.h"

static const char *LINE[24] = {"g1f3", "g8f6", "b1c3", "b8c6", "e2e3", "e7e6", "d2d3", "d7d6",
                               "f1e2", "f8e7", "c1d2", "c8d7", "a2a3", "a7a6", "h2h3", "h7h6",
                               "b2b3", "b7b6", "g2g3", "g7g6", "a1b1", "a8b8", "h1g1", "h8g8"};

int main(void) {
    char line[8192];
    int moves = 0;
    atexit(log_cost);
    while (fgets(line, sizeof line, stdin) != NULL) {
        lines_read++;
        if (strncmp(line, "uci", 3) == 0 && (line[3] == '\n' || line[3] == '\r')) {
            reply("id name instant-uci\nuciok\n");
        } else if (strncmp(line, "isready", 7) == 0) {
            reply("readyok\n");
        } else if (strncmp(line, "position", 8) == 0) {
            moves = count_after(line, "moves");
        } else if (strncmp(line, "go", 2) == 0) {
            char out[32];
            snprintf(out, sizeof out, "bestmove %s\n", LINE[moves % 24]);
            searches++;
            reply(out);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    return 0;
}
