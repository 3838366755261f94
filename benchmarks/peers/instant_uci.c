/* An instant UCI engine for benchmarks/peers.py: every game follows the same line, which black mates on the 16th
 * ply (1.a3 a6 2.b3 b6 3.c3 c6 4.a4 a5 5.b4 h6 6.c4 h5 7.f3 e5 8.g4 Qh4#), each `go` answered at once. A mate ends
 * the game in every arena with its default flags: cutechess-cli ignores `-maxmoves` for an engine that prints no
 * search depth, and played such a line on until an illegal move. */
#include "common.h"

#define PLIES 16

static const char *LINE[PLIES] = {"a2a3", "a7a6", "b2b3", "b7b6", "c2c3", "c7c6", "a3a4", "a6a5",
                                  "b3b4", "h7h6", "c3c4", "h6h5", "f2f3", "e7e5", "g2g4", "d8h4"};

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
            /* Past the mate there is nothing to play: a move the arena must refuse, so that peers.py sees it. */
            snprintf(out, sizeof out, "bestmove %s\n", moves < PLIES ? LINE[moves] : "0000");
            searches++;
            reply(out);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    return 0;
}
