/* An instant UQI engine for benchmarks/peers.py: every game is the same 16 turns (the last one wins, so the
 * arena ends the game itself), each `go` answered at once. */
#include "common.h"

static const char *GAME[16] = {"9",   "d11", "b15", "a4c", "a10", "b32", "a27", "b48",
                               "d4e", "a36", "d24", "d33", "c2f", "c1b", "c4a", "b2"};

int main(void) {
    char line[8192];
    int turns = 0;
    atexit(log_cost);
    while (fgets(line, sizeof line, stdin) != NULL) {
        lines_read++;
        if (strncmp(line, "uqi", 3) == 0 && (line[3] == '\n' || line[3] == ' ' || line[3] == '\r')) {
            reply("id name instant-uqi\nuqiok 1\n");
        } else if (strncmp(line, "isready", 7) == 0) {
            reply("readyok\n");
        } else if (strncmp(line, "position", 8) == 0) {
            turns = count_after(line, "turns");
        } else if (strncmp(line, "go", 2) == 0) {
            char out[32];
            snprintf(out, sizeof out, "turn %s\n", GAME[turns % 16]);
            searches++;
            reply(out);
        } else if (strncmp(line, "quit", 4) == 0) {
            break;
        }
    }
    return 0;
}
